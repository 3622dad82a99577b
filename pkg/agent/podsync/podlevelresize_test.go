package podsync

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/cm"
)

// podCPUQuota reads a pod cgroup's CFS quota (cgroup v1 or v2).
func podCPUQuota(t *testing.T, path string) string {
	t.Helper()
	return strings.Fields(readPodCgroup(t, path, "cpu", "cpu.cfs_quota_us", "cpu.max"))[0]
}

// resizePodLevel gives pod pod-level resources r, as a resize through pods/resize does,
// and returns its new generation.
func (h *harness) resizePodLevel(pod *corev1.Pod, r corev1.ResourceRequirements) int64 {
	h.t.Helper()
	p := h.apiPod(pod)
	p.Spec.Resources = &r
	p.Generation++
	if _, err := h.Client.CoreV1().Pods(p.Namespace).Update(h.ctx, p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	return p.Generation
}

// TestResizePodLevel: a resize of a pod's pod-level resources (InPlacePodLevelResources-
// VerticalScaling, on by default in 1.36) reaches the pod cgroup, its CPU quota and
// memory limit, without touching its containers; the status reports PodResizeInProgress
// at the resize's generation while it is applied, then the pod's allocatedResources and
// status.resources (read back from the pod cgroup) say the new values. A resize the node
// cannot hold is deferred: the pod cgroup and the status keep the granted values.
func TestResizePodLevel(t *testing.T) {
	h := newHarness(t)
	const full = "Node didn't have enough resource: memory, requested: 1073741824, used: 0, capacity: 1000"
	room := switchableRoom(h, "OutOfmemory", full)
	pod := agenttest.Pod("plr", corev1.RestartPolicyAlways, "c")
	pod.Spec.Resources = ptr.To(guaranteed("100m", "64Mi"))
	pod, st := h.start(pod)
	cgroup := cm.PodCgroup(h.syncer.cfg.CgroupRoot, pod)
	wantPod := func(when string, r corev1.ResourceRequirements, quota, memory string) {
		t.Helper()
		got := h.apiPod(pod)
		if got.Status.Resources == nil || !equality.Semantic.DeepEqual(*got.Status.Resources, r) {
			t.Errorf("%s: status.resources %+v, want %+v", when, got.Status.Resources, r)
		}
		if !equality.Semantic.DeepEqual(got.Status.AllocatedResources, r.Requests) {
			t.Errorf("%s: status.allocatedResources %+v, want %+v", when, got.Status.AllocatedResources, r.Requests)
		}
		if q, m := podCPUQuota(t, cgroup), podMemoryLimit(t, cgroup); q != quota || m != memory {
			t.Errorf("%s: pod cgroup quota %s memory %s, want %s and %s", when, q, m, quota, memory)
		}
	}
	wantPod("started", guaranteed("100m", "64Mi"), "10000", "67108864")
	h.Runtime.TakeCalls()
	h.TakeEvents()

	var written []corev1.PodStatus
	h.Client.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		if u, ok := action.(clienttesting.UpdateAction); ok && u.GetSubresource() == "status" {
			written = append(written, *u.GetObject().(*corev1.Pod).Status.DeepCopy())
		}
		return false, nil, nil
	})
	gen := h.resizePodLevel(pod, guaranteed("200m", "128Mi"))
	h.sync(st, pod)
	// The container sets no limits: its cgroup's follow the pod-level ones.
	h.wantCalls("of a pod-level resize", "resize c cpu=2/20000 memory=134217728")
	wantPod("resized", guaranteed("200m", "128Mi"), "20000", "134217728")
	if len(written) < 2 {
		t.Fatalf("%d status writes for a pod-level resize, want one while it is applied and one after", len(written))
	}
	if c := condition(written[len(written)-2], corev1.PodResizeInProgress); c == nil || c.ObservedGeneration != gen {
		t.Errorf("PodResizeInProgress while the resize is applied: %+v, want True at generation %d", c, gen)
	}
	if c := condition(h.apiPod(pod).Status, corev1.PodResizeInProgress); c != nil {
		t.Errorf("PodResizeInProgress after the resize: %+v", c)
	}
	if ev := h.TakeEvents(); len(ev) != 2 || !strings.HasPrefix(ev[0], "Normal ResizeStarted") || !strings.HasPrefix(ev[1], "Normal ResizeCompleted") {
		t.Errorf("events of a pod-level resize %q, want ResizeStarted and ResizeCompleted", ev)
	}
	written = nil
	h.sync(st, pod)
	if len(written) != 0 {
		t.Errorf("a sync after the resize wrote the status: %+v", written)
	}

	*room = false
	h.resizePodLevel(pod, guaranteed("200m", "1Gi"))
	h.sync(st, pod)
	if c := condition(h.apiPod(pod).Status, corev1.PodResizePending); c == nil || c.Reason != corev1.PodReasonDeferred || c.Message != full {
		t.Errorf("PodResizePending of a pod-level resize that does not fit: %+v", c)
	}
	wantPod("deferred", guaranteed("200m", "128Mi"), "20000", "134217728")
	if r := h.syncer.AllocatedPod(h.apiPod(pod)).Spec.Resources; r == nil || !equality.Semantic.DeepEqual(*r, guaranteed("200m", "128Mi")) {
		t.Errorf("allocated pod's pod-level resources %+v, want the granted ones", r)
	}

	// A memory limit below what the pod uses is refused before anything of it is applied.
	*room = true
	chargeMemory(t, cgroup, 8<<20)
	gen = h.resizePodLevel(pod, guaranteed("200m", "1Mi"))
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Error("a pod memory limit below usage made no error")
	}
	c := condition(h.apiPod(pod).Status, corev1.PodResizeInProgress)
	below := regexp.MustCompile(`^cannot decrease memory limits: attempting to set pod memory limit \(1048576\) below current usage \(\d+\)$`)
	if c == nil || c.Reason != corev1.PodReasonError || !below.MatchString(c.Message) || c.ObservedGeneration != gen {
		t.Errorf("PodResizeInProgress of a memory limit below usage: %+v, want reason Error matching %s at generation %d", c, below, gen)
	}
	if q, m := podCPUQuota(t, cgroup), podMemoryLimit(t, cgroup); q != "20000" || m != "134217728" {
		t.Errorf("refused resize: pod cgroup quota %s memory %s, want them unchanged", q, m)
	}
}

// chargeMemory has a process in pod cgroup path write bytes to a file, so their page
// cache is charged to the cgroup.
func chargeMemory(t *testing.T, path string, bytes int) {
	t.Helper()
	procs := filepath.Join("/sys/fs/cgroup/memory", path, "cgroup.procs")
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		procs = filepath.Join("/sys/fs/cgroup", path, "cgroup.procs")
	}
	cmd := exec.Command("sh", "-c", fmt.Sprintf("read x; head -c %d /dev/zero > %s", bytes, filepath.Join(t.TempDir(), "data")))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(procs, []byte(fmt.Sprint(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

func condition(s corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

// TestPodLevelStatusWithoutPodLevelResources: a pod with no pod-level resources reports
// status.resources too, as the 1.36 kubelet: before it runs, its requests and limits as
// the scheduler counts them; once it runs, the CPU request read back from its cgroup,
// the memory request of its containers, and no limit where its cgroup sets none.
func TestPodLevelStatusWithoutPodLevelResources(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("burst", corev1.RestartPolicyAlways, "c")
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	pod, st := h.start(pod)
	want := corev1.ResourceRequirements{Requests: pod.Spec.Containers[0].Resources.Requests}
	for _, when := range []string{"started", "running"} {
		got := h.apiPod(pod).Status.Resources
		if got == nil || !equality.Semantic.DeepEqual(got.Requests, want.Requests) || len(got.Limits) != 0 {
			t.Errorf("%s: status.resources %+v, want %+v", when, got, want)
		}
		h.sync(st, pod)
	}
}

// TestResizePodLevelRestartsInheritor: a container that sets no memory limit of its own
// runs with its pod's pod-level one; a pod-level resize of that limit restarts it when its
// memory resizePolicy says RestartContainer, as the kubelet's computePodResizeAction
// compares the container's limits with the pod-level ones merged in (GetLimits), with the
// kubelet's Killing message.
func TestResizePodLevelRestartsInheritor(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("plr", corev1.RestartPolicyAlways, "c")
	pod.Spec.Resources = ptr.To(guaranteed("100m", "64Mi"))
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	pod, st := h.start(pod)
	h.Runtime.TakeCalls()
	h.TakeEvents()

	h.resizePodLevel(pod, guaranteed("100m", "128Mi"))
	h.Clock.Step(time.Second) // the new run starts after the old
	h.sync(st, pod)
	h.wantCalls("of a pod-level memory resize", "stop c", "create c", "start c")
	if ev := h.TakeEvents(); !slices.Contains(ev, "Normal Killing Container c resize requires restart") {
		t.Errorf("events %q, want the kubelet's Killing event for the restart", ev)
	}
	if m := podMemoryLimit(t, cm.PodCgroup(h.syncer.cfg.CgroupRoot, pod)); m != "134217728" {
		t.Errorf("pod cgroup memory limit %s, want 134217728", m)
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "c"); cs.RestartCount != 1 || cs.State.Running == nil {
		t.Errorf("c after the resize: restarts %d, state %+v, want running again, 1 restart", cs.RestartCount, cs.State)
	}
	h.sync(st, pod)
	h.wantCalls("of a sync after the restart")

	// A CPU limit's resize keeps the container (its CPU policy is NotRequired).
	h.resizePodLevel(pod, guaranteed("200m", "128Mi"))
	h.sync(st, pod)
	h.wantCalls("of a pod-level CPU resize", "resize c cpu=2/20000 memory=134217728")
}
