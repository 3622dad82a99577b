package podsync

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/cm"
)

// podMemoryLimit reads a pod cgroup's memory limit (cgroup v1 or v2).
func podMemoryLimit(t *testing.T, path string) string {
	t.Helper()
	return readPodCgroup(t, path, "memory", "memory.limit_in_bytes", "memory.max")
}

// readPodCgroup reads a file of a pod cgroup: v1File under the controller's hierarchy, or
// v2File in the unified one.
func readPodCgroup(t *testing.T, path, controller, v1File, v2File string) string {
	t.Helper()
	file := filepath.Join("/sys/fs/cgroup", controller, path, v1File)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		file = filepath.Join("/sys/fs/cgroup", path, v2File)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func guaranteed(cpu, mem string) corev1.ResourceRequirements {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// TestResizeInPlace: a resize (the pod's containers' resources changed through
// pods/resize) reaches the running container through the runtime, without a restart,
// and the status reports the resources it runs with; a failed one is reported as
// PodResizeInProgress with reason Error; a resource whose resizePolicy says
// RestartContainer restarts the container instead.
func TestResizeInPlace(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("rs", corev1.RestartPolicyAlways, "c")
	pod.Spec.Containers[0].Resources = guaranteed("20m", "35Mi")
	pod, st := h.start(pod)
	h.Runtime.TakeCalls()
	wantStatus := func(when string, want corev1.ResourceRequirements) {
		t.Helper()
		got := h.apiPod(pod)
		cs := agenttest.ContainerStatus(got, "c")
		if cs.Resources == nil || !equality.Semantic.DeepEqual(*cs.Resources, want) {
			t.Errorf("%s: status resources %+v, want %+v (%+v)", when, cs.Resources, want, cs.State)
		}
		// Allocated are the spec's: the node took the resize, even where it could not apply it.
		if allocated := got.Spec.Containers[0].Resources.Requests; !equality.Semantic.DeepEqual(cs.AllocatedResources, allocated) {
			t.Errorf("%s: allocated %+v, want %+v", when, cs.AllocatedResources, allocated)
		}
		if got.Status.ObservedGeneration != got.Generation {
			t.Errorf("%s: observedGeneration %d of generation %d", when, got.Status.ObservedGeneration, got.Generation)
		}
	}
	wantStatus("started", guaranteed("20m", "35Mi"))

	resize := func(r corev1.ResourceRequirements) { h.resize(pod, r) }
	h.TakeEvents()
	resize(guaranteed("25m", "40Mi"))
	h.sync(st, pod)
	h.wantCalls("of a resize", "resize c cpu=25/2500 memory=41943040")
	wantStatus("resized", guaranteed("25m", "40Mi"))
	// The kubelet's words: what the spec asks for and its generation, in JSON.
	summary := fmt.Sprintf(`{"containers":[{"name":"c","resources":{"limits":{"cpu":"25m","memory":"40Mi"},"requests":{"cpu":"25m","memory":"40Mi"}}}],"generation":%d}`, h.apiPod(pod).Generation)
	if ev := h.TakeEvents(); len(ev) != 2 || ev[0] != "Normal ResizeStarted Pod resize started: "+summary || ev[1] != "Normal ResizeCompleted Pod resize completed: "+summary {
		t.Errorf("events of a resize %q, want ResizeStarted and ResizeCompleted with %s", ev, summary)
	}
	if got := podMemoryLimit(t, cm.PodCgroup(h.syncer.cfg.CgroupRoot, pod)); got != "41943040" {
		t.Errorf("pod cgroup memory limit %s after the resize, want 41943040", got)
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "c"); cs.RestartCount != 0 {
		t.Errorf("restart count %d after a resize in place", cs.RestartCount)
	}
	h.sync(st, pod)
	h.wantCalls("of a sync after the resize")

	h.Runtime.ResizeErr = errors.New("memory limit (1024) below current usage")
	resize(guaranteed("25m", "1Ki"))
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Error("a failed resize made no error")
	}
	var inProgress *corev1.PodCondition
	for _, c := range h.apiPod(pod).Status.Conditions {
		if c.Type == corev1.PodResizeInProgress {
			inProgress = &c
		}
	}
	if inProgress == nil || inProgress.Reason != corev1.PodReasonError || inProgress.Message == "" {
		t.Errorf("a failed resize's condition: %+v", inProgress)
	}
	wantStatus("resize failed", guaranteed("25m", "40Mi"))
	h.Runtime.ResizeErr = nil
	resize(guaranteed("25m", "40Mi"))
	h.sync(st, pod)
	for _, c := range h.apiPod(pod).Status.Conditions {
		if c.Type == corev1.PodResizeInProgress || c.Type == corev1.PodResizePending {
			t.Errorf("condition %s after the resize was undone", c.Type)
		}
	}
	h.Runtime.TakeCalls()

	p := h.apiPod(pod)
	p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	p.Spec.Containers[0].Resources = guaranteed("25m", "50Mi")
	if _, err := h.Client.CoreV1().Pods(p.Namespace).Update(h.ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Step(time.Second) // the new run starts after the old
	h.sync(st, pod)
	h.wantCalls("of a resize whose policy restarts", "stop c", "create c", "start c")
	if got := podMemoryLimit(t, cm.PodCgroup(h.syncer.cfg.CgroupRoot, pod)); got != "52428800" {
		t.Errorf("pod cgroup memory limit %s after the restart, want 52428800", got)
	}
	wantStatus("restarted", guaranteed("25m", "50Mi"))
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "c"); cs.RestartCount != 1 {
		t.Errorf("restart count %d after a resize that restarts", cs.RestartCount)
	}
}

// TestResizeDeferred: a resize the node cannot hold beside its other pods is not applied;
// the container keeps running with the resources it was granted (status resources and
// allocatedResources say so), the pod reports PodResizePending with reason Deferred and
// the admission's words and a ResizeDeferred event, and the sync asks to be repeated. Once
// the node holds it (the other pod gone), the resize goes through as any other.
func TestResizeDeferred(t *testing.T) {
	h := newHarness(t)
	const full = "Node didn't have enough resource: cpu, requested: 900, used: 800, capacity: 1000"
	room := switchableRoom(h, "OutOfcpu", full)
	pod := agenttest.Pod("rs", corev1.RestartPolicyAlways, "c")
	pod.Spec.Containers[0].Resources = guaranteed("20m", "35Mi")
	pod, st := h.start(pod)
	h.Runtime.TakeCalls()
	h.TakeEvents()

	*room = false
	p := h.apiPod(pod)
	p.Spec.Containers[0].Resources = guaranteed("900m", "35Mi")
	p.Generation++
	if _, err := h.Client.CoreV1().Pods(p.Namespace).Update(h.ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := h.sync(st, pod); after <= 0 || after > resizeRetry {
		t.Errorf("a deferred resize asks to sync again after %v, want within %v", after, resizeRetry)
	}
	h.wantCalls("of a deferred resize")
	got := h.apiPod(pod)
	cs := agenttest.ContainerStatus(got, "c")
	if cs.Resources == nil || !equality.Semantic.DeepEqual(*cs.Resources, guaranteed("20m", "35Mi")) ||
		!equality.Semantic.DeepEqual(cs.AllocatedResources, guaranteed("20m", "35Mi").Requests) {
		t.Errorf("deferred: status resources %+v, allocated %+v, want the granted 20m", cs.Resources, cs.AllocatedResources)
	}
	var pending *corev1.PodCondition
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			pending = &c
		}
	}
	if pending == nil || pending.Status != corev1.ConditionTrue || pending.Reason != corev1.PodReasonDeferred || pending.Message != full {
		t.Errorf("PodResizePending: %+v, want True Deferred %q", pending, full)
	}
	want := fmt.Sprintf(`Warning ResizeDeferred Pod resize Deferred: {"containers":[{"name":"c","resources":{"limits":{"cpu":"900m","memory":"35Mi"},"requests":{"cpu":"900m","memory":"35Mi"}}}],"generation":%d,"error":%q}`, got.Generation, full)
	if ev := h.TakeEvents(); len(ev) != 1 || ev[0] != want {
		t.Errorf("events %q, want %q", ev, want)
	}
	// The other pods see it with what it was granted, not with what it asks for.
	if r := h.syncer.AllocatedPod(got).Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(r, guaranteed("20m", "35Mi")) {
		t.Errorf("allocated pod's resources %+v", r)
	}
	updates := h.statusUpdates()
	h.Clock.Step(resizeRetry)
	h.sync(st, pod)
	if n := h.statusUpdates(); n != updates {
		t.Errorf("a resize still deferred wrote %d more statuses", n-updates)
	}
	if ev := h.TakeEvents(); len(ev) != 0 {
		t.Errorf("a resize still deferred recorded %q again", ev)
	}

	*room = true
	h.sync(st, pod)
	h.wantCalls("of the resize once it fits", "resize c cpu=921/90000 memory=36700160")
	got = h.apiPod(pod)
	if cs := agenttest.ContainerStatus(got, "c"); cs.Resources == nil || !equality.Semantic.DeepEqual(*cs.Resources, guaranteed("900m", "35Mi")) {
		t.Errorf("granted: status resources %+v", cs.Resources)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			t.Errorf("PodResizePending %+v after the resize was granted", c)
		}
	}
}

// TestResizeInProgressCondition: while the node applies a resize it granted, the pod
// reports PodResizeInProgress=True (no reason or message, observedGeneration the
// generation of the resize), written before the containers get their new resources, as
// the kubelet's SyncPod does; once they run with them the condition goes. A failed resize
// keeps the condition, now with reason Error, at the generation it started with.
func TestResizeInProgressCondition(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("rip", corev1.RestartPolicyAlways, "c")
	pod.Spec.Containers[0].Resources = guaranteed("20m", "35Mi")
	pod, st := h.start(pod)
	var written []corev1.PodStatus
	h.Client.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		if u, ok := action.(clienttesting.UpdateAction); ok && u.GetSubresource() == "status" {
			written = append(written, *u.GetObject().(*corev1.Pod).Status.DeepCopy())
		}
		return false, nil, nil
	})
	inProgress := func(s corev1.PodStatus) *corev1.PodCondition {
		for _, c := range s.Conditions {
			if c.Type == corev1.PodResizeInProgress {
				return &c
			}
		}
		return nil
	}
	resize := func(r corev1.ResourceRequirements) int64 { return h.resize(pod, r) }
	gen := resize(guaranteed("25m", "40Mi"))
	h.sync(st, pod)
	if len(written) < 2 {
		t.Fatalf("%d status writes for a resize, want one while it is applied and one after", len(written))
	}
	during := written[len(written)-2]
	c := inProgress(during)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "" || c.Message != "" || c.ObservedGeneration != gen {
		t.Errorf("PodResizeInProgress while the resize is applied: %+v, want True at generation %d", c, gen)
	}
	if cs := during.ContainerStatuses[0]; cs.Resources == nil || !equality.Semantic.DeepEqual(*cs.Resources, guaranteed("20m", "35Mi")) {
		t.Errorf("resources while the resize is applied %+v, want the old ones", cs.Resources)
	}
	if c := inProgress(h.apiPod(pod).Status); c != nil {
		t.Errorf("PodResizeInProgress after the resize: %+v", c)
	}

	written = nil
	h.sync(st, pod)
	if len(written) != 0 {
		t.Errorf("a sync after the resize wrote the status: %+v", written)
	}

	h.Runtime.ResizeErr = errors.New("memory limit (1024) below current usage")
	gen = resize(guaranteed("25m", "1Ki"))
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Error("a failed resize made no error")
	}
	if c := inProgress(h.apiPod(pod).Status); c == nil || c.Reason != corev1.PodReasonError || c.Message == "" || c.ObservedGeneration != gen {
		t.Errorf("a failed resize's condition: %+v, want reason Error at generation %d", c, gen)
	}
}

// resize gives pod's first container resources r, as a resize through pods/resize does (its
// generation bumped), and returns its new generation.
func (h *harness) resize(pod *corev1.Pod, r corev1.ResourceRequirements) int64 {
	h.t.Helper()
	p := h.apiPod(pod)
	p.Spec.Containers[0].Resources = r
	p.Generation++
	if _, err := h.Client.CoreV1().Pods(p.Namespace).Update(h.ctx, p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	return p.Generation
}

// switchableRoom makes the node's admission check hold a resize while *room is true, and
// refuse it with reason and message once the test sets it false.
func switchableRoom(h *harness, reason, message string) *bool {
	room := true
	h.syncer.fits = func(*corev1.Pod) (bool, string, string) {
		if room {
			return true, "", ""
		}
		return false, reason, message
	}
	return &room
}
