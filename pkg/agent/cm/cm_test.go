package cm

import (
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
	r := ContainerResources(&c, 100)
	if *r.CPU.Shares != 256 || *r.CPU.Quota != 50000 || *r.CPU.Period != 100000 || *r.Memory.Limit != 128<<20 || *r.Pids.Limit != 100 {
		t.Errorf("shares %d quota %d period %d memory %d pids %d", *r.CPU.Shares, *r.CPU.Quota, *r.CPU.Period, *r.Memory.Limit, *r.Pids.Limit)
	}
	none := withResources(nil, nil)
	r = ContainerResources(&none, -1)
	if *r.CPU.Shares != 2 || r.CPU.Quota != nil || r.Memory != nil || r.Pids != nil {
		t.Errorf("best effort: %+v %+v", r.CPU, r.Memory)
	}
	tiny := withResources(nil, list("1m", ""))
	if r := ContainerResources(&tiny, 0); *r.CPU.Quota != 1000 || *r.CPU.Shares != 2 {
		t.Errorf("1m limit: quota %d shares %d, want the kubelet's minimums 1000 and 2", *r.CPU.Quota, *r.CPU.Shares)
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
