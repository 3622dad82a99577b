package agent

import (
	"github.com/minik8s/minik8s/pkg/runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestPodPhase(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	creating := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}}}
	exited := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	backingOff := corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}},
	}
	for _, tc := range []struct {
		name     string
		policy   corev1.RestartPolicy
		statuses []corev1.ContainerStatus
		want     corev1.PodPhase
	}{
		{"one still creating", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running, creating}, corev1.PodPending},
		{"all running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running, running}, corev1.PodRunning},
		{"one running one exited", corev1.RestartPolicyNever, []corev1.ContainerStatus{running, exited(1)}, corev1.PodRunning},
		{"crash loop", corev1.RestartPolicyAlways, []corev1.ContainerStatus{backingOff}, corev1.PodRunning},
		{"always, all exited", corev1.RestartPolicyAlways, []corev1.ContainerStatus{exited(0)}, corev1.PodRunning},
		{"never, all succeeded", corev1.RestartPolicyNever, []corev1.ContainerStatus{exited(0), exited(0)}, corev1.PodSucceeded},
		{"never, one failed", corev1.RestartPolicyNever, []corev1.ContainerStatus{exited(0), exited(2)}, corev1.PodFailed},
		{"on failure, succeeded", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{exited(0)}, corev1.PodSucceeded},
		{"on failure, failed restarts", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{exited(1)}, corev1.PodRunning},
	} {
		if got := podPhase(tc.policy, tc.statuses); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestContainerHashFollowsTheSpec(t *testing.T) {
	pod := testPod("web", corev1.RestartPolicyAlways, "app")
	c := pod.Spec.Containers[0]
	before := containerHash(&c)
	if containerHash(c.DeepCopy()) != before {
		t.Fatal("hash of an identical spec differs")
	}
	c.Image = "localhost/minik8s/netexec:v1"
	if containerHash(&c) == before {
		t.Error("hash did not change with the image")
	}
}

func TestContainerEnv(t *testing.T) {
	h := newHarness(t)
	ctx := h.ctx
	h.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"MODE": "fast", "LEVEL": "3"}}, metav1.CreateOptions{})
	h.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{})
	pod := testPod("web", corev1.RestartPolicyAlways, "app")
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
	env, err := h.agent.containerEnv(ctx, pod, c, "10.244.1.5")
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
		{corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "k"}}, "couldn't find key k in Secret default/creds"},
	} {
		c.EnvFrom, c.Env = nil, []corev1.EnvVar{{Name: "X", ValueFrom: &tc.from}}
		if _, err := h.agent.containerEnv(ctx, pod, c, ""); err == nil || err.Error() != tc.want {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

func TestExpandCommand(t *testing.T) {
	got := expandAll([]string{"echo", "$(GREETING) $(NAME)", "$$(NAME)", "$(MISSING)"}, []string{"GREETING=hello", "NAME=world"})
	if want := []string{"echo", "hello world", "$(NAME)", "$(MISSING)"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestConfigValidateNamesFlags(t *testing.T) {
	err := Config{NodeIP: "x", PodCIDR: "10.0.0.0", RootDir: "rel", InsecureRegistries: []string{"http://r.lab/x"}}.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, flag := range []string{"--node-name", "--node-ip", "--pod-cidr", "--root-dir", "--containerd", "--insecure-registry", "--cgroup-root"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("error does not name %s: %v", flag, err)
		}
	}
}

// TestInitializedIsHonest: a pod whose init containers are not done is not Initialized,
// and the condition names them.
func TestInitializedIsHonest(t *testing.T) {
	a := &Agent{clock: clocktesting.NewFakeClock(time.Now())}
	for _, tc := range []struct {
		uninitialized []string
		want          corev1.ConditionStatus
		message       string
	}{
		{nil, corev1.ConditionTrue, ""},
		{[]string{"setup", "migrate"}, corev1.ConditionFalse, "containers with incomplete status: [setup migrate]"},
	} {
		var s corev1.PodStatus
		a.setPodConditions(&s, true, tc.uninitialized, nil)
		c := podCondition(&s, corev1.PodInitialized)
		if c == nil || c.Status != tc.want || c.Message != tc.message {
			t.Errorf("init containers %v: Initialized %+v, want %s %q", tc.uninitialized, c, tc.want, tc.message)
		}
	}
}

// TestReadinessGates: a running, ready pod is Ready only once every readiness gate's
// condition (set by someone else) is True; ContainersReady does not wait for them.
func TestReadinessGates(t *testing.T) {
	a := &Agent{clock: clocktesting.NewFakeClock(time.Now())}
	gates := []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	s := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: "example.com/dns", Status: corev1.ConditionFalse}}}
	a.setPodConditions(&s, true, nil, gates)
	ready := podCondition(&s, corev1.PodReady)
	want := `corresponding condition of pod readiness gate "example.com/lb" does not exist., the status of pod readiness gate "example.com/dns" is not "True", but False`
	if ready.Status != corev1.ConditionFalse || ready.Reason != "ReadinessGatesNotReady" || ready.Message != want {
		t.Errorf("Ready = %+v", ready)
	}
	if c := podCondition(&s, corev1.ContainersReady); c.Status != corev1.ConditionTrue {
		t.Errorf("ContainersReady = %+v, want True", c)
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue})
	podCondition(&s, "example.com/dns").Status = corev1.ConditionTrue
	a.setPodConditions(&s, true, nil, gates)
	if c := podCondition(&s, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready with both gates True = %+v", c)
	}
}

// TestConditionOrder: the kubelet writes the conditions others own first, then its own
// in its order (PodReadyToStartContainers, Initialized, Ready, ContainersReady,
// PodScheduled), whatever order the pod had them in: `kubectl describe pod` and
// `-o yaml` list them so.
func TestConditionOrder(t *testing.T) {
	a := &Agent{clock: clocktesting.NewFakeClock(time.Now())}
	s := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: "example.com/lb", Status: corev1.ConditionTrue}}}
	a.setPodConditions(&s, true, nil, nil)
	s = withTheirConditions(s, corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: "example.com/lb", Status: corev1.ConditionTrue}}})
	var got []string
	for _, c := range s.Conditions {
		got = append(got, string(c.Type))
	}
	want := "example.com/lb PodReadyToStartContainers Initialized Ready ContainersReady PodScheduled"
	if strings.Join(got, " ") != want {
		t.Errorf("conditions in order %v, want %s", got, want)
	}
}

// TestImageIDIsTheRepoDigest: imageID is CRI's imageRef (repository@digest), as the
// kubelet reports it; a container made before the runtime recorded it falls back to the name.
func TestImageIDIsTheRepoDigest(t *testing.T) {
	spec := &corev1.Container{Name: "app", Image: "localhost/minik8s/busybox:v1"}
	c := runtime.Container{ID: "c1", Name: "app", Image: "localhost/minik8s/busybox:v1", State: runtime.StateRunning, StartedAt: time.Now(),
		ImageRef: "localhost/minik8s/busybox@sha256:9caad36a033df11cb403e3f1896105ca0b8924e56b51c5c8fa07c7855265e468"}
	if cs := containerStatus(spec, []runtime.Container{c}, nil, 0); cs.ImageID != c.ImageRef || cs.Image != spec.Image {
		t.Errorf("image %q, imageID %q; want %q, %q", cs.Image, cs.ImageID, spec.Image, c.ImageRef)
	}
	c.ImageRef = ""
	if cs := containerStatus(spec, []runtime.Container{c}, nil, 0); cs.ImageID != c.Image {
		t.Errorf("imageID without a recorded ref %q, want the name", cs.ImageID)
	}
}
