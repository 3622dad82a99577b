package podsync

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/staticpod"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
	"github.com/minik8s/minik8s/pkg/runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func TestContainerHashFollowsTheSpec(t *testing.T) {
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	c := pod.Spec.Containers[0]
	before := containerHash(&c)
	if containerHash(c.DeepCopy()) != before {
		t.Fatal("hash of an identical spec differs")
	}
	// Resources and resizePolicy change in place (an in-place resize), as the kubelet's hash.
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	if containerHash(&c) != before {
		t.Error("hash changed with the resources")
	}
	c.Image = "localhost/minik8s/netexec:v1"
	if containerHash(&c) == before {
		t.Error("hash did not change with the image")
	}
}

func TestContainerEnv(t *testing.T) {
	h := newHarness(t)
	ctx := h.ctx
	h.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"MODE": "fast", "LEVEL": "3"}, BinaryData: map[string][]byte{"BLOB": []byte("raw")}}, metav1.CreateOptions{})
	h.Client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{})
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Labels = map[string]string{"app": "shop"}
	c := &pod.Spec.Containers[0]
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	c.EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	c.Env = []corev1.EnvVar{
		{Name: "PLAIN", Value: "v"},
		{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "NODE_IP", ValueFrom: field("status.hostIP")},
		{Name: "APP", ValueFrom: field("metadata.labels['app']")},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
		{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
		{Name: "URL", Value: "http://$(POD_IP):8080/$(MODE)?x=$$(MODE)&y=$(NOPE)"},
		{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k", Optional: ptr.To(true)}}},
	}
	env, err := h.syncer.containerEnv(ctx, pod, c, "10.244.1.5", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CFG_LEVEL=3", "CFG_MODE=fast", "PLAIN=v", "POD_NAME=web", "POD_IP=10.244.1.5", "NODE_IP=10.200.0.11", "APP=shop",
		"PASSWORD=s3cret", "MODE=fast", "URL=http://10.244.1.5:8080/fast?x=$(MODE)&y=$(NOPE)"}
	if !slices.Equal(env, want) {
		t.Errorf("env\n got %q\nwant %q", env, want)
	}
	for _, tc := range []struct {
		from corev1.EnvVarSource
		want string
	}{
		{corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k"}}, `configmap "gone" not found`},
		{corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}}, "couldn't find key k in ConfigMap default/cfg"},
		// The kubelet reads env only from data; binaryData feeds volumes, not variables.
		{corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "BLOB"}}, "couldn't find key BLOB in ConfigMap default/cfg"},
		{corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "k"}}, "couldn't find key k in Secret default/creds"},
	} {
		c.EnvFrom, c.Env = nil, []corev1.EnvVar{{Name: "X", ValueFrom: &tc.from}}
		if _, err := h.syncer.containerEnv(ctx, pod, c, "", nil); err == nil || err.Error() != tc.want {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// TestFileKeyRefEnv: a variable from an env file in one of the pod's volumes, as the
// kubelet's EnvFiles: the value as written, an optional missing key no variable, and the
// kubelet's errors for a missing key, an unknown volume and a file it cannot parse.
func TestFileKeyRefEnv(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.env"), []byte("BAD\nDB_ADDR='db:5432'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.env"), []byte("DB_ADDR='db:5432'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vols := map[string]volumes.Volume{"config": {Path: dir}}
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	c := &pod.Spec.Containers[0]
	ref := func(volume, path, key string, optional bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: volume, Path: path, Key: key, Optional: ptr.To(optional)}}
	}
	c.Env = []corev1.EnvVar{{Name: "DB", ValueFrom: ref("config", "ok.env", "DB_ADDR", false)}, {Name: "OPT", ValueFrom: ref("config", "ok.env", "NOPE", true)}}
	env, err := h.syncer.containerEnv(h.ctx, pod, c, "", vols)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, "DB=db:5432") || slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "OPT=") }) {
		t.Errorf("env %q, want DB=db:5432 and no OPT", env)
	}
	for _, tc := range []struct {
		from *corev1.EnvVarSource
		want string
	}{
		{ref("config", "ok.env", "NOPE", false), fmt.Sprintf("environment variable key %q not found in file %q", "NOPE", filepath.Join(dir, "ok.env"))},
		{ref("other", "ok.env", "DB_ADDR", false), `cannot find the volume "other" referenced by FileKeyRef`},
		{ref("config", "config.env", "DB_ADDR", false), "couldn't parse env file"},
		{ref("config", "missing.env", "DB_ADDR", true), "couldn't parse env file"},
	} {
		c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: tc.from}}
		if _, err := h.syncer.containerEnv(h.ctx, pod, c, "", vols); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %q", *tc.from.FileKeyRef, err, tc.want)
		}
	}
}

// TestServiceEnv: a container gets the kubelet's variables for the `kubernetes` Service
// of default and for every Service of its namespace with a cluster IP (headless and
// ExternalName ones have none), each in Docker's link style; enableServiceLinks false
// leaves only the `kubernetes` Service's; the container's own env wins and may refer to them.
func TestServiceEnv(t *testing.T) {
	h := newHarness(t)
	ctx := h.ctx
	svc := func(ns, name, ip string, ports ...corev1.ServicePort) {
		t.Helper()
		if _, err := h.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})
	svc("shop", "fooservice", "10.96.0.20", corev1.ServicePort{Port: 8765, Protocol: corev1.ProtocolTCP})
	svc("shop", "dns-x", "10.96.0.30", corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, corev1.ServicePort{Name: "metrics", Port: 9153})
	svc("shop", "headless", corev1.ClusterIPNone, corev1.ServicePort{Port: 80})
	svc("elsewhere", "other", "10.96.0.40", corev1.ServicePort{Port: 80})
	h.syncer = h.newSyncer() // a minilet started now, whose informer has read the Services
	requests := serviceRequests(h)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Namespace = "shop"
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{{Name: "FOOSERVICE_SERVICE_PORT", Value: "mine"}, {Name: "DNS", Value: "$(DNS_X_SERVICE_HOST)"}}
	env, err := h.syncer.containerEnv(ctx, pod, c, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"DNS_X_SERVICE_HOST=10.96.0.30", "DNS_X_SERVICE_PORT=53", "DNS_X_SERVICE_PORT_DNS=53", "DNS_X_SERVICE_PORT_METRICS=9153",
		"DNS_X_PORT=udp://10.96.0.30:53", "DNS_X_PORT_53_UDP=udp://10.96.0.30:53", "DNS_X_PORT_53_UDP_PROTO=udp",
		"DNS_X_PORT_53_UDP_PORT=53", "DNS_X_PORT_53_UDP_ADDR=10.96.0.30", "DNS_X_PORT_9153_TCP=tcp://10.96.0.30:9153",
		"DNS_X_PORT_9153_TCP_PROTO=tcp", "DNS_X_PORT_9153_TCP_PORT=9153", "DNS_X_PORT_9153_TCP_ADDR=10.96.0.30",
		"FOOSERVICE_SERVICE_HOST=10.96.0.20", "FOOSERVICE_SERVICE_PORT=mine", "FOOSERVICE_PORT=tcp://10.96.0.20:8765",
		"FOOSERVICE_PORT_8765_TCP=tcp://10.96.0.20:8765", "FOOSERVICE_PORT_8765_TCP_PROTO=tcp", "FOOSERVICE_PORT_8765_TCP_PORT=8765",
		"FOOSERVICE_PORT_8765_TCP_ADDR=10.96.0.20",
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443",
		"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_PROTO=tcp",
		"KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
		"DNS=10.96.0.30",
	}
	if !slices.Equal(env, want) {
		t.Errorf("env\n got %q\nwant %q", env, want)
	}
	pod.Spec.EnableServiceLinks = ptr.To(false)
	c.Env = nil
	env, err = h.syncer.containerEnv(ctx, pod, c, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 8 || !slices.Contains(env, "KUBERNETES_SERVICE_HOST=10.96.0.1") || slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "FOOSERVICE") }) {
		t.Errorf("enableServiceLinks false: env %q, want only the kubernetes Service's 8", env)
	}
	if n := serviceRequests(h) - requests; n != 0 {
		t.Errorf("%d requests for Services to make two containers' env, want none (the informer's lister)", n)
	}
}

// serviceRequests counts the requests for Services sent to the fake API so far.
func serviceRequests(h *harness) int {
	n := 0
	for _, a := range h.Client.Actions() {
		if a.GetResource().Resource == "services" {
			n++
		}
	}
	return n
}

// A minilet that has not yet read the Services (the API down since it started) fails an
// API pod's start with the kubelet's "services have not yet been read at least once", but
// a static pod starts without their variables.
func TestServiceEnvWithoutTheAPI(t *testing.T) {
	h := &harness{t: t, ctx: t.Context(), Env: agenttest.NewEnv(), servicesDown: true}
	h.Client.PrependReactor("list", "services", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	h.syncer = h.newSyncer()
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	if _, err := h.syncer.containerEnv(h.ctx, pod, &pod.Spec.Containers[0], "", nil); err == nil || err.Error() != "services have not yet been read at least once, cannot construct envvars" {
		t.Errorf("an API pod's env without the API: %v, want the kubelet's error", err)
	}
	pod.Annotations = map[string]string{staticpod.AnnotationSource: "file"}
	if _, err := h.syncer.containerEnv(h.ctx, pod, &pod.Spec.Containers[0], "", nil); err != nil {
		t.Errorf("a static pod's env without the API: %v", err)
	}
}

func TestExpandCommand(t *testing.T) {
	got := expandAll([]string{"echo", "$(GREETING) $(NAME)", "$$(NAME)", "$(MISSING)"}, []string{"GREETING=hello", "NAME=world"})
	if want := []string{"echo", "hello world", "$(NAME)", "$(MISSING)"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestImageIDIsTheRepoDigest: imageID is CRI's imageRef (repository@digest), as the
// kubelet reports it; a container made before the runtime recorded it falls back to the name.
func TestImageIDIsTheRepoDigest(t *testing.T) {
	spec := &corev1.Container{Name: "app", Image: "localhost/minik8s/busybox:v1"}
	c := runtime.Container{ID: "c1", Name: "app", Image: "localhost/minik8s/busybox:v1", State: runtime.StateRunning, StartedAt: time.Now(),
		ImageRef: "localhost/minik8s/busybox@sha256:9caad36a033df11cb403e3f1896105ca0b8924e56b51c5c8fa07c7855265e468"}
	if cs := containerStatus(spec, []runtime.Container{c}, nil, 0, nil); cs.ImageID != c.ImageRef || cs.Image != spec.Image {
		t.Errorf("image %q, imageID %q; want %q, %q", cs.Image, cs.ImageID, spec.Image, c.ImageRef)
	}
	c.ImageRef = ""
	if cs := containerStatus(spec, []runtime.Container{c}, nil, 0, nil); cs.ImageID != c.Image {
		t.Errorf("imageID without a recorded ref %q, want the name", cs.ImageID)
	}
}

// TestStatusListsVolumeMounts: every container status lists the container's volume mounts
// (name, path, readOnly), waiting or running, as the kubelet's convertToAPIContainerStatuses;
// a read-only one is not recursively read-only (RecursiveReadOnly Disabled: minilet does not
// make recursive read-only mounts).
func TestStatusListsVolumeMounts(t *testing.T) {
	spec := &corev1.Container{Name: "app", Image: "localhost/minik8s/busybox:v1", VolumeMounts: []corev1.VolumeMount{
		{Name: "data", MountPath: "/data", SubPath: "x"},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
	}}
	want := []corev1.VolumeMountStatus{
		{Name: "data", MountPath: "/data"},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true,
			RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyDisabled)},
	}
	running := runtime.Container{ID: "c1", Name: "app", Image: spec.Image, State: runtime.StateRunning, StartedAt: time.Now()}
	for _, history := range [][]runtime.Container{nil, {running}} {
		if got := containerStatus(spec, history, nil, 0, nil).VolumeMounts; !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%d runtime containers: volumeMounts %+v, want %+v", len(history), got, want)
		}
	}
}

// TestStatusReportsTheUser: a container's status reports the identity its process runs as
// (user.linux: uid, gid, supplementalGroups), as the kubelet 1.35+ copies it from CRI's
// status; a container not made yet, or made by an older minilet, reports none.
func TestStatusReportsTheUser(t *testing.T) {
	spec := &corev1.Container{Name: "app", Image: "localhost/minik8s/busybox:v1"}
	c := runtime.Container{ID: "c1", Name: "app", Image: spec.Image, State: runtime.StateRunning, StartedAt: time.Now(),
		User: "1000:3000:3000,4000"}
	want := &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}}
	if got := containerStatus(spec, []runtime.Container{c}, nil, 0, nil).User; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("user %+v, want %+v", got, want)
	}
	c.User = ""
	if got := containerStatus(spec, []runtime.Container{c}, nil, 0, nil).User; got != nil {
		t.Errorf("user %+v of a container with none recorded, want none", got)
	}
	if got := containerStatus(spec, nil, nil, 0, nil).User; got != nil {
		t.Errorf("user %+v of a container not made yet, want none", got)
	}
}

// TestStatusResourcesOfContainersThatRan: a container the runtime has reports its
// allocatedResources and resources, the allocated ones (the spec's) when it is not running,
// as the kubelet's convertToAPIContainerStatuses; one not made yet reports neither.
func TestStatusResourcesOfContainersThatRan(t *testing.T) {
	spec := &corev1.Container{Name: "app", Image: "localhost/minik8s/busybox:v1", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}
	exited := runtime.Container{ID: "c1", Name: "app", Image: spec.Image, State: runtime.StateExited, ExitCode: 1, StartedAt: time.Now(), FinishedAt: time.Now()}
	for _, history := range [][]runtime.Container{nil, {exited}} {
		cs := containerStatus(spec, history, &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff}, 0, nil)
		var cur *runtime.Container
		if len(history) > 0 {
			cur = &history[0]
		}
		withResources(&cs, spec, cur)
		switch {
		case cur == nil && (cs.Resources != nil || cs.AllocatedResources != nil):
			t.Errorf("container not made yet: resources %+v, allocated %+v; want neither", cs.Resources, cs.AllocatedResources)
		case cur != nil && (cs.Resources == nil || !equality.Semantic.DeepEqual(*cs.Resources, spec.Resources) || !equality.Semantic.DeepEqual(cs.AllocatedResources, spec.Resources.Requests)):
			t.Errorf("exited container: resources %+v, allocated %+v; want the spec's", cs.Resources, cs.AllocatedResources)
		}
	}
}

// TestPodStatusAllocatedResources: the pod's status.allocatedResources are the requests the
// node allocated to the whole pod, aggregated over its containers as the scheduler counts
// them (an init container's above the app containers' sum counts), as the 1.36 kubelet
// reports them (InPlacePodLevelResourcesVerticalScaling, beta and on).
func TestPodStatusAllocatedResources(t *testing.T) {
	h := newHarness(t)
	cpu := func(v string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
	}
	pod := withInit(agenttest.Pod("web", corev1.RestartPolicyAlways, "a", "b"), "setup")
	pod.Spec.InitContainers[0].Resources = cpu("500m")
	pod.Spec.Containers[0].Resources, pod.Spec.Containers[1].Resources = cpu("100m"), cpu("200m")
	pod, st := h.admit(pod)
	got := h.syncer.podStatus(st, pod, nil, false).AllocatedResources
	if want := (corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("allocatedResources %v, want %v", got, want)
	}
}

// TestContainerOfTheOldHashKept: a container made by minilet before resources left the
// hash carries the whole spec's fingerprint; it counts as unchanged, so an upgrade of
// minilet restarts none of the running containers.
func TestContainerOfTheOldHashKept(t *testing.T) {
	h := newHarness(t)
	p := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	pod, st := h.start(p)
	h.Runtime.Mu.Lock()
	for _, c := range h.Runtime.Containers {
		if c.Name == "app" {
			c.SpecHash = fingerprint(&pod.Spec.Containers[0])
		}
	}
	h.Runtime.Mu.Unlock()
	h.Runtime.TakeCalls()
	h.Clock.Step(time.Second)
	h.sync(st, pod)
	h.wantCalls("syncing a container of the old hash")
}

// TestServiceInformerKeepsWhatEnvNeeds: the Service informer keeps of each Service only
// its name, namespace and what its variables read (cluster IP; ports' names, numbers and
// protocols), not its labels, annotations, selector or status.
func TestServiceInformerKeepsWhatEnvNeeds(t *testing.T) {
	h := newHarness(t)
	if _, err := h.Client.CoreV1().Services("shop").Create(h.ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"note": strings.Repeat("x", 1000)}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"}, Selector: map[string]string{"app": "web"},
			Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.syncer = h.newSyncer()
	got, err := h.syncer.services.Lister.Services("shop").Get("web")
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: got.ResourceVersion},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the informer keeps\n%+v\nwant\n%+v", got, want)
	}
}

// TestFinishedPodKeepsItsStatusWithoutContainers: a finished pod whose exited containers
// the disk reclaim removed reports the phase and container states it ended with, whether
// its worker last wrote them or only the API has them, as the kubelet keeps a terminal
// phase and an old Terminated state the runtime no longer has.
func TestFinishedPodKeepsItsStatusWithoutContainers(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("done", corev1.RestartPolicyNever, "app"))
	h.exitAndSync(st, pod, "app", 0)
	finished := h.apiPod(pod)
	if finished.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s after the container exited 0, want Succeeded", finished.Status.Phase)
	}
	if n, err := h.syncer.RemoveExitedContainers(h.ctx, finished); err != nil || n != 1 {
		t.Fatalf("removed %d exited containers (%v), want the one", n, err)
	}
	for name, tc := range map[string]struct {
		st  *PodState
		pod *corev1.Pod
	}{
		"last written, the pod given older": {st, pod},
		"the API's, nothing written":        {newPodState(finished, apiTime(h.Clock.Now())), finished},
	} {
		got := h.syncer.podStatus(tc.st, tc.pod, h.Runtime.Named(string(pod.UID), "app"), false)
		cs := agenttest.ContainerStatus(&corev1.Pod{Status: got}, "app")
		if got.Phase != corev1.PodSucceeded || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
			t.Errorf("%s: status %s %+v without the container, want Succeeded, app Completed", name, got.Phase, cs.State)
		}
	}
}

// TestStatusesInTheKubeletsOrder: app and ephemeral containers' statuses come sorted by
// name, init containers' in the spec's order, as the kubelet's convertToAPIContainerStatuses
// writes them (so `containerStatuses[0]` and kubectl's STATUS column of a pod whose
// containers differ read as on Kubernetes).
func TestStatusesInTheKubeletsOrder(t *testing.T) {
	h := newHarness(t)
	pod := withInit(agenttest.Pod("web", corev1.RestartPolicyAlways, "zeta", "alpha", "mid"), "setup")
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "b-init", Image: pod.Spec.InitContainers[0].Image})
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg2", Image: pod.Spec.Containers[0].Image}},
		{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg1", Image: pod.Spec.Containers[0].Image}}}
	pod, st := h.admit(pod)
	ps := h.syncer.podStatus(st, pod, nil, false)
	names := func(statuses []corev1.ContainerStatus) string {
		var out []string
		for _, cs := range statuses {
			out = append(out, cs.Name)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct{ what, got, want string }{
		{"init containers", names(ps.InitContainerStatuses), "setup b-init"},
		{"containers", names(ps.ContainerStatuses), "alpha mid zeta"},
		{"ephemeral containers", names(ps.EphemeralContainerStatuses), "dbg1 dbg2"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s' statuses in order %q, want %q", tc.what, tc.got, tc.want)
		}
	}
}

// TestVanishedContainerCountsARestart: a running container removed behind minilet's back
// (`ctr container rm`, a runtime that lost its state) is started again as a restart, its
// lastState what the kubelet's convertToAPIContainerStatuses infers (ContainerStatusUnknown,
// exit code 137) and its log a new file, as the kubelet numbers it.
func TestVanishedContainerCountsARestart(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	h.sync(st, pod)
	gone := h.Runtime.Named(string(pod.UID), "app")[0]
	if err := os.WriteFile(gone.LogPath, []byte("its run\n"), 0o640); err != nil { // as the runtime writes it
		t.Fatal(err)
	}
	if err := h.Runtime.RemoveContainer(h.ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	h.Clock.Step(time.Second)
	h.sync(st, pod)
	again := h.Runtime.Named(string(pod.UID), "app")
	if len(again) != 1 || again[0].RestartCount != 1 || again[0].LogPath == gone.LogPath {
		t.Fatalf("after the removal: %+v, want one new container, restart 1, a log of its own (the old one at %s)", again, gone.LogPath)
	}
	cs := h.apiPod(pod).Status.ContainerStatuses[0]
	last := cs.LastTerminationState.Terminated
	if cs.RestartCount != 1 || last == nil || last.Reason != "ContainerStatusUnknown" || last.ExitCode != 137 ||
		last.Message != "The container could not be located when the pod was deleted.  The container used to be Running" {
		t.Errorf("status %+v, want restartCount 1 and lastState ContainerStatusUnknown, exit code 137", cs)
	}

	// One removed, with the runs before it, while it waited to restart counts a restart too.
	h.exitAndSync(st, pod, "app", 1) // restarted at once
	h.exitAndSync(st, pod, "app", 1) // backing off
	for _, c := range h.Runtime.Named(string(pod.UID), "app") {
		if err := os.WriteFile(c.LogPath, []byte("its run\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := h.Runtime.RemoveContainer(h.ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	h.Clock.Step(time.Minute)
	h.sync(st, pod)
	if again := h.Runtime.Named(string(pod.UID), "app"); len(again) != 1 || again[0].RestartCount != 3 {
		t.Errorf("after the removal of a container backing off: %+v, want one new container, restart 3", again)
	}
}
