package poddefaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPodDefaults(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "busybox",
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		},
		Ports: []corev1.ContainerPort{{ContainerPort: 80}},
	}}}}
	Pod(pod)
	c := pod.Spec.Containers[0]
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Requests.Memory().String() != "64Mi" {
		t.Errorf("requests %v: a given request stays, a missing one is the limit", c.Resources.Requests)
	}
	if c.ImagePullPolicy != corev1.PullAlways || c.Ports[0].Protocol != corev1.ProtocolTCP || pod.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		*pod.Spec.TerminationGracePeriodSeconds != TerminationGracePeriod {
		t.Errorf("defaults: %+v", pod.Spec)
	}
}

// TestSpecDefaults holds the defaults kube-apiserver gives what a pod spec holds (its
// generated SetObjectDefaults_Pod): probes, HTTP handlers, volume modes, field selectors.
func TestSpecDefaults(t *testing.T) {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		HostNetwork: true,
		Containers: []corev1.Container{{
			Name: "app", Image: "busybox:1",
			Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
			ReadinessProbe: probe,
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9}}, PeriodSeconds: 5},
			Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
			Env:            []corev1.EnvVar{{Name: "N", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "none"},
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
			{Name: "d", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}},
			{Name: "i", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox:1"}}},
			{Name: "l", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}}},
			{Name: "n", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox", PullPolicy: corev1.PullNever}}},
			{Name: "e", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}},
			{Name: "iscsi", VolumeSource: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{}}},
			{Name: "rbd", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{RBDPool: "mine"}}},
			{Name: "azure", VolumeSource: corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{}}},
			{Name: "scaleio", VolumeSource: corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{}}},
		},
	}}
	Pod(pod)
	c := pod.Spec.Containers[0]
	if p := c.ReadinessProbe; p.TimeoutSeconds != 1 || p.PeriodSeconds != 10 || p.SuccessThreshold != 1 || p.FailureThreshold != 3 ||
		p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("readiness probe %+v: want timeout 1, period 10, success 1, failure 3, path /, scheme HTTP", p)
	}
	if p := c.LivenessProbe; p.PeriodSeconds != 5 || p.FailureThreshold != 3 || p.GRPC.Service == nil || *p.GRPC.Service != "" {
		t.Errorf("liveness probe %+v: a given period stays, grpc service \"\"", p)
	}
	if h := c.Lifecycle.PreStop.HTTPGet; h.Path != "/" || h.Scheme != corev1.URISchemeHTTP {
		t.Errorf("preStop %+v", h)
	}
	if f := c.Env[0].ValueFrom.FieldRef; f.APIVersion != "v1" {
		t.Errorf("env fieldRef %+v: want apiVersion v1", f)
	}
	if c.Ports[0].HostPort != 8080 {
		t.Errorf("hostNetwork port %+v: want hostPort = containerPort", c.Ports[0])
	}
	v := pod.Spec.Volumes
	if v[0].EmptyDir == nil {
		t.Errorf("a volume without a source: %+v, want emptyDir", v[0])
	}
	if *v[1].Secret.DefaultMode != 0o644 || *v[2].ConfigMap.DefaultMode != 0o644 || *v[4].DownwardAPI.DefaultMode != 0o644 ||
		*v[5].Projected.DefaultMode != 0o644 {
		t.Errorf("volume modes: %+v", v)
	}
	if *v[3].HostPath.Type != corev1.HostPathUnset || v[4].DownwardAPI.Items[0].FieldRef.APIVersion != "v1" ||
		*v[5].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds != 3600 {
		t.Errorf("volumes: %+v", v)
	}
	if v[6].Image.PullPolicy != corev1.PullIfNotPresent || v[7].Image.PullPolicy != corev1.PullAlways || v[8].Image.PullPolicy != corev1.PullNever {
		t.Errorf("image volume pull policies %q, %q, %q: want IfNotPresent for a tag, Always for latest, a given one kept",
			v[6].Image.PullPolicy, v[7].Image.PullPolicy, v[8].Image.PullPolicy)
	}
	if m := v[9].Ephemeral.VolumeClaimTemplate.Spec.VolumeMode; m == nil || *m != corev1.PersistentVolumeFilesystem {
		t.Errorf("ephemeral volume's claim template volumeMode %v, want Filesystem", m)
	}
	if v[10].ISCSI.ISCSIInterface != "default" || !equality.Semantic.DeepEqual(*v[11].RBD, corev1.RBDVolumeSource{RBDPool: "mine", RadosUser: "admin", Keyring: "/etc/ceph/keyring"}) {
		t.Errorf("iscsi %+v, rbd %+v: want kube's defaults, a given pool kept", v[10].ISCSI, v[11].RBD)
	}
	if a := v[12].AzureDisk; *a.CachingMode != corev1.AzureDataDiskCachingReadWrite || *a.FSType != "ext4" || *a.ReadOnly || *a.Kind != corev1.AzureSharedBlobDisk {
		t.Errorf("azureDisk %+v: want kube's defaults", a)
	}
	if sc := v[13].ScaleIO; sc.StorageMode != "ThinProvisioned" || sc.FSType != "xfs" {
		t.Errorf("scaleIO %+v: want kube's defaults", sc)
	}
}

// TestTemplateDefaults: a template gets the pod spec's defaults, not a pod's own.
func TestTemplateDefaults(t *testing.T) {
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
	PodSpec(spec)
	if spec.RestartPolicy != corev1.RestartPolicyAlways || spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("spec defaults missing: %+v", spec)
	}
	if spec.EnableServiceLinks != nil || spec.Containers[0].Resources.Requests != nil {
		t.Errorf("a template got a pod's defaults: enableServiceLinks %v, requests %v", spec.EnableServiceLinks, spec.Containers[0].Resources.Requests)
	}
}

// TestPodLevelDefaults: pod-level resources (spec.resources) get kube's SetDefaults_Pod
// defaults (PodLevelResources, on by default): hugepages limits from the containers', then
// requests from the containers' (overcommittable resources) or else from the pod's limits.
func TestPodLevelDefaults(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name                 string
		pod                  *corev1.ResourceRequirements
		container            corev1.ResourceRequirements
		wantReqs, wantLimits corev1.ResourceList
	}{
		{"no pod-level resources", nil, corev1.ResourceRequirements{}, nil, nil},
		{"pod limits, containers ask nothing: requests are the limits",
			&corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}}, corev1.ResourceRequirements{},
			corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}, corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}},
		{"pod limits, containers' requests: requests are the containers'",
			&corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("1")}},
			corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("200m"), "memory": q("100Mi")}},
			corev1.ResourceList{"cpu": q("200m"), "memory": q("100Mi")}, corev1.ResourceList{"cpu": q("1")}},
		{"pod requests only: nothing defaulted",
			&corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}}, corev1.ResourceRequirements{},
			corev1.ResourceList{"cpu": q("1")}, nil},
		{"containers' hugepages limits become the pod's, then its requests",
			&corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("1")}},
			corev1.ResourceRequirements{Limits: corev1.ResourceList{"hugepages-2Mi": q("4Mi"), "memory": q("64Mi")}},
			corev1.ResourceList{"cpu": q("1"), "memory": q("64Mi"), "hugepages-2Mi": q("4Mi")},
			corev1.ResourceList{"cpu": q("1"), "hugepages-2Mi": q("4Mi")}},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Resources: tc.pod, Containers: []corev1.Container{{Name: "c", Image: "busybox:1", Resources: tc.container}}}}
		Pod(pod)
		var reqs, limits corev1.ResourceList
		if r := pod.Spec.Resources; r != nil {
			reqs, limits = r.Requests, r.Limits
		}
		if !equalLists(reqs, tc.wantReqs) || !equalLists(limits, tc.wantLimits) {
			t.Errorf("%s: requests %v limits %v; want %v and %v", tc.name, reqs, limits, tc.wantReqs, tc.wantLimits)
		}
	}
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, v := range a {
		if w, ok := b[n]; !ok || w.Cmp(v) != 0 {
			return false
		}
	}
	return true
}

// TestQuantitiesRoundedUpToMilli: kube's SetDefaults_ResourceList rounds every quantity of
// a pod's resource lists up to the milli scale (100u is 1m); kube-apiserver v1.36.3 stores
// them so, side by side.
func TestQuantitiesRoundedUpToMilli(t *testing.T) {
	tiny := func() corev1.ResourceList { return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100u")} }
	exact := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000u")} // the same value, written at the milli scale
	ResourceList(exact)
	if got := exact.Cpu().String(); got != "1m" {
		t.Errorf("1000u became %s, want 1m", got)
	}
	ephemeral := &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("0.0001")}}}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:          []corev1.Container{{Name: "app", Image: "busybox", Resources: corev1.ResourceRequirements{Limits: tiny(), Requests: tiny()}}},
		InitContainers:      []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Limits: tiny()}}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: tiny()}}}},
		Overhead:            tiny(),
		Resources:           &corev1.ResourceRequirements{Limits: tiny()},
		Volumes:             []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: ephemeral}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", AllocatedResources: tiny(),
			Resources: &corev1.ResourceRequirements{Requests: tiny()}}}}}
	Pod(pod)
	s := &pod.Spec
	for what, l := range map[string]corev1.ResourceList{
		"container limits": s.Containers[0].Resources.Limits, "container requests": s.Containers[0].Resources.Requests,
		"init container limits": s.InitContainers[0].Resources.Limits, "init container requests": s.InitContainers[0].Resources.Requests,
		"ephemeral container requests": s.EphemeralContainers[0].Resources.Requests, "overhead": s.Overhead,
		"pod limits": s.Resources.Limits, "pod requests": s.Resources.Requests,
		"status allocated": pod.Status.ContainerStatuses[0].AllocatedResources, "status requests": pod.Status.ContainerStatuses[0].Resources.Requests,
	} {
		if got := l.Cpu().String(); got != "1m" {
			t.Errorf("%s: cpu %s, want 1m", what, got)
		}
	}
	if got := s.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.Resources.Requests.Storage().String(); got != "1m" {
		t.Errorf("ephemeral claim's storage %s, want 1m", got)
	}
	whole := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	ResourceList(whole)
	if got := whole.Memory().String(); got != "64Mi" {
		t.Errorf("64Mi became %s", got)
	}
}
