package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

const resizePod = `apiVersion: v1
kind: Pod
metadata: {name: resized}
spec:
  containers:
  - name: c1
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    resources: {limits: {cpu: 250m, memory: 64Mi}}
  - name: c2
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    resources: {limits: {cpu: 250m, memory: 64Mi}}
`

// TestInPlaceResize: a resize through pods/resize (one container up, one down, as the
// conformance tests do) reaches the running containers' cgroups and their pod's without
// a restart, read from the node and from inside each container, and the status reports
// it: the resources, the generation observed, no resize condition left.
func TestInPlaceResize(t *testing.T) {
	l := upLab(t, "e2e-rsz", 1)
	applyYAML(t, l, resizePod)
	waitFor(t, "the pod Running", 60*time.Second, func() (bool, string) {
		p := getPod(t, l, "resized")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	mustKubectl(t, l, "patch", "pod", "resized", "--subresource=resize", "--type=strategic", "-p",
		`{"spec":{"containers":[{"name":"c1","resources":{"limits":{"cpu":"500m","memory":"96Mi"},"requests":{"cpu":"500m","memory":"96Mi"}}},`+
			`{"name":"c2","resources":{"limits":{"cpu":"200m","memory":"48Mi"},"requests":{"cpu":"200m","memory":"48Mi"}}}]}}`)
	want := map[string]struct{ cpu, memory, quota, limit string }{
		"c1": {"500m", "96Mi", "50000", "100663296"},
		"c2": {"200m", "48Mi", "20000", "50331648"},
	}
	var p corev1.Pod
	waitFor(t, "the resize reported", 60*time.Second, func() (bool, string) {
		p = getPod(t, l, "resized")
		if p.Status.ObservedGeneration != p.Generation {
			return false, fmt.Sprintf("observedGeneration %d of %d", p.Status.ObservedGeneration, p.Generation)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizeInProgress || c.Type == corev1.PodResizePending {
				return false, fmt.Sprintf("%s %s: %s", c.Type, c.Reason, c.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			w := want[cs.Name]
			if cs.Resources == nil || cs.Resources.Limits.Cpu().String() != w.cpu || cs.Resources.Limits.Memory().String() != w.memory {
				return false, fmt.Sprintf("%s: %+v", cs.Name, cs.Resources)
			}
		}
		return true, ""
	})
	if p.Generation != 2 {
		t.Errorf("generation %d after one resize, want 2", p.Generation)
	}
	for _, cs := range p.Status.ContainerStatuses {
		w := want[cs.Name]
		if cs.RestartCount != 0 || cs.State.Running == nil {
			t.Errorf("%s: restarts %d, state %+v; want running, not restarted", cs.Name, cs.RestartCount, cs.State)
		}
		if got := cs.AllocatedResources.Cpu().String(); got != w.cpu {
			t.Errorf("%s: allocated cpu %s, want %s", cs.Name, got, w.cpu)
		}
		dir := filepath.Join(cluster.CgroupRoot(l.Nodes[0]), "kubepods", "pod"+string(p.UID), strings.TrimPrefix(cs.ContainerID, "containerd://"))
		if memory, cpu := cgroupLimits(t, dir); memory != w.limit || cpu != w.quota+" 100000" {
			t.Errorf("cgroup of %s: memory limit %q, cpu quota/period %q; want %s and %s 100000", cs.Name, memory, cpu, w.limit, w.quota)
		}
		// What the conformance tests read: the container's own cgroup, from inside it.
		inside := strings.Fields(mustKubectl(t, l, "exec", "resized", "-c", cs.Name, "--", "sh", "-c",
			"cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_quota_us"))
		if strings.Join(inside, " ") != w.limit+" "+w.quota {
			t.Errorf("cgroup of %s read inside it: %q, want %s %s", cs.Name, inside, w.limit, w.quota)
		}
	}
	podDir := filepath.Join(cluster.CgroupRoot(l.Nodes[0]), "kubepods", "pod"+string(p.UID))
	if memory, cpu := cgroupLimits(t, podDir); memory != "150994944" || cpu != "70000 100000" {
		t.Errorf("pod cgroup: memory limit %q, cpu quota/period %q; want 150994944 (144Mi) and 70000 100000", memory, cpu)
	}
}

const initResizePod = `apiVersion: v1
kind: Pod
metadata: {name: init-resized}
spec:
  initContainers:
  - name: init
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
`

// TestInPlaceResizeInitContainer: a running non-sidecar init container is resized through
// pods/resize (kube 1.36, InPlacePodVerticalScalingInitContainers) without a restart: its
// cgroup and its pod's get the new limits, and its status reports them.
func TestInPlaceResizeInitContainer(t *testing.T) {
	l := upLab(t, "e2e-irsz", 1)
	applyYAML(t, l, initResizePod)
	var p corev1.Pod
	waitFor(t, "the init container running", 60*time.Second, func() (bool, string) {
		p = getPod(t, l, "init-resized")
		return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].State.Running != nil, fmt.Sprintf("%+v", p.Status.InitContainerStatuses)
	})
	started := p.Status.InitContainerStatuses[0].ContainerID
	mustKubectl(t, l, "patch", "pod", "init-resized", "--subresource=resize", "--type=strategic", "-p",
		`{"spec":{"initContainers":[{"name":"init","resources":{"limits":{"cpu":"200m","memory":"96Mi"},"requests":{"cpu":"200m","memory":"96Mi"}}}]}}`)
	waitFor(t, "the resize reported", 60*time.Second, func() (bool, string) {
		p = getPod(t, l, "init-resized")
		cs := p.Status.InitContainerStatuses[0]
		done := p.Status.ObservedGeneration == 2 && cs.Resources != nil && cs.Resources.Limits.Memory().String() == "96Mi"
		return done, fmt.Sprintf("observedGeneration %d, %+v", p.Status.ObservedGeneration, cs.Resources)
	})
	cs := p.Status.InitContainerStatuses[0]
	if cs.ContainerID != started || cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("init container %s (was %s): restarts %d, state %+v; want the same one running", cs.ContainerID, started, cs.RestartCount, cs.State)
	}
	podDir := filepath.Join(cluster.CgroupRoot(l.Nodes[0]), "kubepods", "pod"+string(p.UID))
	if memory, cpu := cgroupLimits(t, filepath.Join(podDir, strings.TrimPrefix(cs.ContainerID, "containerd://"))); memory != "100663296" || cpu != "20000 100000" {
		t.Errorf("init container cgroup: memory limit %q, cpu quota/period %q; want 100663296 (96Mi) and 20000 100000", memory, cpu)
	}
	// The pod's limits are its init container's now, the larger.
	if memory, cpu := cgroupLimits(t, podDir); memory != "100663296" || cpu != "20000 100000" {
		t.Errorf("pod cgroup: memory limit %q, cpu quota/period %q; want 100663296 (96Mi) and 20000 100000", memory, cpu)
	}
}
