package cm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func withResources(req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func list(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func TestContainerResources(t *testing.T) {
	c := withResources(list("250m", "64Mi"), list("500m", "128Mi"))
	r := ContainerResources(nil, &c)
	if *r.CPU.Shares != 256 || *r.CPU.Quota != 50000 || *r.CPU.Period != 100000 || *r.Memory.Limit != 128<<20 || r.Pids != nil {
		t.Errorf("shares %d quota %d period %d memory %d pids %v", *r.CPU.Shares, *r.CPU.Quota, *r.CPU.Period, *r.Memory.Limit, r.Pids)
	}
	none := withResources(nil, nil)
	r = ContainerResources(nil, &none)
	if *r.CPU.Shares != 2 || r.CPU.Quota != nil || r.Memory != nil || r.Pids != nil {
		t.Errorf("best effort: %+v %+v", r.CPU, r.Memory)
	}
	tiny := withResources(nil, list("1m", ""))
	if r := ContainerResources(nil, &tiny); *r.CPU.Quota != 1000 || *r.CPU.Shares != 2 {
		t.Errorf("1m limit: quota %d shares %d, want the kubelet's minimums 1000 and 2", *r.CPU.Quota, *r.CPU.Shares)
	}
	// A limit the container does not set is the pod-level one; one it sets is its own.
	podLevel := &corev1.ResourceRequirements{Requests: list("1", "256Mi"), Limits: list("1", "256Mi")}
	if r := ContainerResources(podLevel, &none); *r.CPU.Shares != 2 || r.CPU.Quota == nil || *r.CPU.Quota != 100000 || r.Memory == nil || *r.Memory.Limit != 256<<20 {
		t.Errorf("no limits under pod-level ones: %+v %+v, want quota 100000 and memory %d", r.CPU, r.Memory, 256<<20)
	}
	if r := ContainerResources(podLevel, &c); *r.CPU.Quota != 50000 || *r.Memory.Limit != 128<<20 {
		t.Errorf("own limits under pod-level ones: quota %d memory %d, want its own", *r.CPU.Quota, *r.Memory.Limit)
	}
}

func TestPodCgroupAndOOMScore(t *testing.T) {
	const gi = int64(1 << 30)
	pod := func(c corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	for _, tc := range []struct {
		name   string
		c      corev1.Container
		cgroup string
		adj    int
	}{
		{"guaranteed", withResources(list("1", "1Gi"), list("1", "1Gi")), "/minik8s/kubepods/podu1", -997},
		{"burstable quarter", withResources(list("", "1Gi"), nil), "/minik8s/kubepods/burstable/podu1", 750},
		{"burstable all memory", withResources(list("", "4Gi"), nil), "/minik8s/kubepods/burstable/podu1", 2},
		{"burstable cpu only", withResources(list("100m", ""), nil), "/minik8s/kubepods/burstable/podu1", 999},
		{"best effort", withResources(nil, nil), "/minik8s/kubepods/besteffort/podu1", 1000},
	} {
		p := pod(tc.c)
		if got := PodCgroup("/minik8s", p); got != tc.cgroup {
			t.Errorf("%s: cgroup %s, want %s", tc.name, got, tc.cgroup)
		}
		if got := OOMScoreAdj(p, &p.Spec.Containers[0], 4*gi); got != tc.adj {
			t.Errorf("%s: oom_score_adj %d, want %d", tc.name, got, tc.adj)
		}
	}
}

// withPodLevel gives p pod-level resources (spec.resources), as defaulted by the API server.
func withPodLevel(p *corev1.Pod, req, lim corev1.ResourceList) *corev1.Pod {
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: req, Limits: lim}
	return p
}

func TestPodResources(t *testing.T) {
	pod := func(cs ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: corev1.PodSpec{Containers: cs}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want PodLimits
	}{
		{"best effort", pod(withResources(nil, nil)), PodLimits{CPUShares: 2, PidsLimit: 100}},
		{"guaranteed, two containers", pod(withResources(list("500m", "64Mi"), list("500m", "64Mi")), withResources(list("250m", "32Mi"), list("250m", "32Mi"))),
			PodLimits{CPUShares: 768, CPUQuota: 75000, MemoryLimit: 96 << 20, PidsLimit: 100}},
		{"burstable, one container without limits", pod(withResources(list("500m", "64Mi"), list("1", "128Mi")), withResources(list("100m", ""), nil)),
			PodLimits{CPUShares: 614, PidsLimit: 100}},
		{"pod-level limits, containers ask nothing", withPodLevel(pod(withResources(nil, nil)), list("1", "128Mi"), list("1", "128Mi")),
			PodLimits{CPUShares: 1024, CPUQuota: 100000, MemoryLimit: 128 << 20, PidsLimit: 100}},
		{"pod-level memory limit over a container without limits", withPodLevel(pod(withResources(list("100m", ""), nil)), list("100m", "64Mi"), list("", "64Mi")),
			PodLimits{CPUShares: 102, MemoryLimit: 64 << 20, PidsLimit: 100}},
	} {
		if got := PodResources(tc.pod, 100); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// An init container asking for more than the app containers sets the pod's request.
	p := pod(withResources(list("100m", ""), nil))
	p.Spec.InitContainers = []corev1.Container{withResources(list("1", ""), nil)}
	if got := PodResources(p, 0); got.CPUShares != 1024 {
		t.Errorf("init container of 1 CPU: shares %d, want 1024", got.CPUShares)
	}
}

// On a v2-only host (Debian 12, Ubuntu 22.04 with systemd) the files and child cgroups at
// the top of /sys/fs/cgroup are not hierarchies: taking cgroup.controllers for one made
// every removal fail with "not a directory". A v1 or hybrid layout's hierarchies are its
// directories (symlinks to them too), never its files.
func TestHierarchiesUnder(t *testing.T) {
	layout := func(dirs, files []string) string {
		base := t.TempDir()
		for _, d := range dirs {
			if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(base, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return base
	}
	v2 := layout([]string{"system.slice", "init.scope"}, []string{"cgroup.controllers", "cgroup.procs"})
	if got := hierarchiesUnder(v2); !slices.Equal(got, []string{v2}) {
		t.Errorf("v2-only layout: %v, want only %s", got, v2)
	}
	v1 := layout([]string{"cpu,cpuacct", "memory", "unified"}, []string{"stray"})
	if err := os.Symlink("cpu,cpuacct", filepath.Join(v1, "cpu")); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(v1, "cpu"), filepath.Join(v1, "cpu,cpuacct"), filepath.Join(v1, "memory"), filepath.Join(v1, "unified")}
	if got := hierarchiesUnder(v1); !slices.Equal(got, want) {
		t.Errorf("hybrid layout: %v, want %v", got, want)
	}
}
