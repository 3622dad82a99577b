package podsync

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// TestRestartAllContainers: a container exiting with a code its RestartAllContainers rule
// matches has every container of the pod, init containers and sidecars included, killed and
// removed (app containers first, the one that exited last) and run again from the first
// init container, in the same sandbox, as the kubelet's computePodActions and
// convertToAPIContainerStatuses (RestartAllContainersOnContainerExits).
func TestRestartAllContainers(t *testing.T) {
	h := newHarness(t)
	pod := withInit(agenttest.Pod("job", corev1.RestartPolicyNever, "app", "other"), "setup", "log")
	pod.Spec.InitContainers[1].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	app := &pod.Spec.Containers[0]
	app.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
	app.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	pod, st := h.start(pod)
	h.exitAndSync(st, pod, "setup", 0)
	h.sync(st, pod)
	before := h.apiPod(pod)
	if cs := agenttest.ContainerStatus(before, "app"); cs.State.Running == nil {
		t.Fatalf("app before its exit: %+v", cs)
	}
	if c := condition(before.Status, corev1.AllContainersRestarting); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("AllContainersRestarting before the exit: %+v, want False", c)
	}
	h.Runtime.TakeCalls()
	h.TakeEvents()
	updates := len(h.Client.Actions())

	h.exitAndSync(st, pod, "app", 42)
	h.wantCalls("after app exited 42",
		"stop other", "remove other", "remove setup", "stop log", "remove log", "remove app",
		"create setup", "start setup")
	if !hasEvent(h.TakeEvents(), "Normal Killing killing") {
		t.Error("no Killing event")
	}

	// The status written before the reset: app exited 42, the pod restarting; the next,
	// once the containers are gone: each waits, RestartingAllContainers.
	var restarting, removed *corev1.PodStatus
	for _, a := range h.Client.Actions()[updates:] {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			p := u.GetObject().(*corev1.Pod)
			if restarting != nil {
				removed = &p.Status
				break
			}
			if ptr.Deref(condition(p.Status, corev1.AllContainersRestarting), corev1.PodCondition{}).Status == corev1.ConditionTrue {
				restarting = &p.Status
			}
		}
	}
	if restarting == nil || removed == nil {
		t.Fatalf("status while restarting %+v, once removed %+v", restarting, removed)
	}
	wantWaiting := corev1.ContainerStateWaiting{Reason: "RestartingAllContainers", Message: "The container is removed because RestartAllContainers in place"}
	for _, cs := range append(removed.InitContainerStatuses, removed.ContainerStatuses...) {
		if w := cs.State.Waiting; w == nil || *w != wantWaiting || cs.RestartCount != 1 {
			t.Errorf("%s once removed: restarts %d, state %+v, want waiting %+v", cs.Name, cs.RestartCount, cs.State, wantWaiting)
		}
	}
	if c := condition(*removed, corev1.AllContainersRestarting); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("AllContainersRestarting once removed: %+v, want False", c)
	}
	// Each container stopped, to run again (the kubelet's getPhase).
	if removed.Phase != corev1.PodRunning {
		t.Errorf("phase once removed %s, want Running", removed.Phase)
	}
	if c := condition(*restarting, corev1.AllContainersRestarting); c.Reason != "RestartAllContainersStarted" || c.Message != "container exited with restart policy rule" {
		t.Errorf("AllContainersRestarting: %+v", c)
	}
	if cs := agenttest.ContainerStatus(&corev1.Pod{Status: *restarting}, "app"); cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 42 {
		t.Errorf("app while restarting: %+v, want terminated with 42", cs)
	}

	got := h.apiPod(pod)
	if c := condition(got.Status, corev1.AllContainersRestarting); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "" {
		t.Errorf("AllContainersRestarting after the reset: %+v, want False", c)
	}
	// Pending while setup runs again, though still Initialized (the kubelet's getPhase and
	// GeneratePodInitializedCondition).
	if got.Status.PodIP != before.Status.PodIP || got.Status.Phase != corev1.PodPending {
		t.Errorf("pod IP %s phase %s after the reset, want IP %s, Pending", got.Status.PodIP, got.Status.Phase, before.Status.PodIP)
	}
	if c := condition(got.Status, corev1.PodInitialized); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized after the reset: %+v, want True", c)
	}
	wantLast := corev1.ContainerStateTerminated{Reason: "RestartingAllContainers", ExitCode: 137,
		Message: "The container is removed because RestartAllContainers in place"}
	for _, cs := range append(got.Status.InitContainerStatuses, got.Status.ContainerStatuses...) {
		if last := cs.LastTerminationState.Terminated; cs.RestartCount != 1 || last == nil || *last != wantLast {
			t.Errorf("%s after the reset: restarts %d, lastState %+v", cs.Name, cs.RestartCount, last)
		}
	}
	if cs := initStatusOf(got, "setup"); cs.State.Running == nil {
		t.Errorf("setup after the reset: %+v, want running", cs)
	}
	// What waits for setup says so, as any container of a pod with init containers does
	// before it is made (the kubelet's default waiting state).
	for _, cs := range append([]corev1.ContainerStatus{initStatusOf(got, "log")}, got.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w == nil || w.Reason != "PodInitializing" {
			t.Errorf("%s after the reset: %+v, want waiting PodInitializing", cs.Name, cs.State)
		}
	}

	// The pod runs again in order, in the same sandbox.
	h.exitAndSync(st, pod, "setup", 0)
	h.sync(st, pod)
	h.wantCalls("after setup succeeded again", "create log", "start log", "create app", "start app", "create other", "start other")
	got = h.apiPod(pod)
	if cs := agenttest.ContainerStatus(got, "app"); cs.State.Running == nil || cs.RestartCount != 1 ||
		cs.LastTerminationState.Terminated == nil || *cs.LastTerminationState.Terminated != wantLast {
		t.Errorf("app running again: %+v", cs)
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", got.Status.Phase)
	}
}

// TestRestartAllContainersCrashLooping: a container waiting in CrashLoopBackOff when a
// RestartAllContainers rule fires keeps what its status said, as the kubelet's
// convertToAPIContainerStatuses carries it over a removed container that was waiting (its
// reason cache still holds the back-off): waiting CrashLoopBackOff, its last crash as
// lastState, the same restartCount; its next run counts one restart more (the kubelet
// numbers it after the logs it kept) and keeps that lastState.
func TestRestartAllContainersCrashLooping(t *testing.T) {
	h := newHarness(t)
	pod, st, before := h.resetWhileCrashLooping()
	got := agenttest.ContainerStatus(h.apiPod(pod), "loop")
	if w := got.State.Waiting; w == nil || *w != *before.State.Waiting || got.RestartCount != 1 ||
		got.LastTerminationState.Terminated == nil || *got.LastTerminationState.Terminated != *before.LastTerminationState.Terminated {
		t.Errorf("loop after the reset: %+v\nwant as before: %+v", got, before)
	}

	h.exitAndSync(st, pod, "setup", 0)
	got = agenttest.ContainerStatus(h.apiPod(pod), "loop")
	if got.State.Running == nil || got.RestartCount != 2 ||
		got.LastTerminationState.Terminated == nil || *got.LastTerminationState.Terminated != *before.LastTerminationState.Terminated {
		t.Errorf("loop running again: %+v\nwant restartCount 2, lastState %+v", got, before.LastTerminationState.Terminated)
	}
}

// TestRestartAllContainersAdopted: a minilet started after a RestartAllContainers reset
// reports the lastState of a container the reset removed from what the pod's status said,
// as the kubelet carries it over from the pod's previous status.
func TestRestartAllContainersAdopted(t *testing.T) {
	h := newHarness(t)
	pod, _, before := h.resetWhileCrashLooping()
	h.syncer = h.newSyncer()
	h.sync(newPodStateFromAPI(h, pod), pod)
	got := agenttest.ContainerStatus(h.apiPod(pod), "loop")
	if last := got.LastTerminationState.Terminated; last == nil || *last != *before.LastTerminationState.Terminated || got.RestartCount != 1 {
		t.Errorf("loop adopted: restarts %d, lastState %+v, want 1 and %+v", got.RestartCount, last, before.LastTerminationState.Terminated)
	}
}

// resetWhileCrashLooping runs a pod whose container loop waits in CrashLoopBackOff when
// app exits with the code of its RestartAllContainers rule, while its init container
// setup runs again; before is loop's status before the reset.
func (h *harness) resetWhileCrashLooping() (pod *corev1.Pod, st *PodState, before corev1.ContainerStatus) {
	h.t.Helper()
	pod = withInit(agenttest.Pod("job", corev1.RestartPolicyAlways, "app", "loop"), "setup")
	pod.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	pod, st = h.start(pod)
	h.exitAndSync(st, pod, "setup", 0)
	h.exitAndSync(st, pod, "loop", 1) // restarted at once
	h.exitAndSync(st, pod, "loop", 1) // backs off
	before = agenttest.ContainerStatus(h.apiPod(pod), "loop")
	if w := before.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || before.RestartCount != 1 ||
		before.LastTerminationState.Terminated == nil || before.LastTerminationState.Terminated.ExitCode != 1 {
		h.t.Fatalf("loop before the reset: %+v", before)
	}
	h.exitAndSync(st, pod, "app", 42)
	return pod, st, before
}
