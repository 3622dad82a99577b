package podsync

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// sandboxChanged is the event of a pod whose sandbox is made anew, in the kubelet's words
// (SyncPod): Normal, and the same whatever changed.
const sandboxChanged = "Normal SandboxChanged Pod sandbox changed, it will be killed and re-created."

// TestNewSandboxSkipsSucceededContainers: a pod started over in a new sandbox does not run
// again the containers that already succeeded under restartPolicy OnFailure (the pod's, or
// the container's own), as the kubelet's computePodActions leaves them out; the others run
// again in the new sandbox, and the pod's events say the sandbox changed.
func TestNewSandboxSkipsSucceededContainers(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("web", corev1.RestartPolicyOnFailure, "done", "work", "always")
	pod.Spec.Containers[2].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	pod, st := h.start(pod)
	uid := string(pod.UID)
	h.exitAndSync(st, pod, "done", 0)
	h.exitAndSync(st, pod, "always", 0)
	h.Clock.Step(time.Minute) // past the back-off of always's restart
	h.sync(st, pod)
	h.Runtime.TakeCalls()

	h.Clock.Step(time.Second)
	h.TakeEvents()
	h.Runtime.Exit(uid, "sandbox", 137)
	h.sync(st, pod)
	if events := h.TakeEvents(); !slices.Contains(events, sandboxChanged) {
		t.Errorf("events after the sandbox died: %q, want %q", events, sandboxChanged)
	}
	calls := h.Runtime.TakeCalls()
	if slices.Contains(calls, "start done") || !slices.Contains(calls, "start work") || !slices.Contains(calls, "start always") {
		t.Errorf("calls after the sandbox died: %q, want work and always started again, not done", calls)
	}
	got := h.apiPod(pod)
	if cs := agenttest.ContainerStatus(got, "done"); cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.RestartCount != 0 {
		t.Errorf("done after a new sandbox: %+v restarts %d, want still terminated with 0, no restart", cs.State, cs.RestartCount)
	}
	if cs := agenttest.ContainerStatus(got, "work"); cs.State.Running == nil || cs.RestartCount != 1 {
		t.Errorf("work after a new sandbox: %+v restarts %d, want running, restart 1", cs.State, cs.RestartCount)
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", got.Status.Phase)
	}
}

// TestNewSandboxNotMadeUnderRestartNever: under restartPolicy Never a pod whose sandbox
// died is not started over: its containers are stopped and it fails, as the kubelet does
// (no sandbox re-created once a container ran, so no SandboxChanged event).
func TestNewSandboxNotMadeUnderRestartNever(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("job", corev1.RestartPolicyNever, "done", "work"))
	uid := string(pod.UID)
	h.exitAndSync(st, pod, "done", 0)
	h.Runtime.TakeCalls()

	h.Clock.Step(time.Second)
	h.TakeEvents()
	h.Runtime.Exit(uid, "sandbox", 137)
	h.sync(st, pod)
	if events := h.TakeEvents(); hasEvent(events, "Normal SandboxChanged") {
		t.Errorf("events after the sandbox died: %q, want no SandboxChanged", events)
	}
	if calls := h.Runtime.TakeCalls(); slices.ContainsFunc(calls, func(c string) bool { return c == "sandbox job" || c == "start done" || c == "start work" }) || !slices.Contains(calls, "stop work") {
		t.Errorf("calls after the sandbox died: %q, want work stopped and nothing started", calls)
	}
	if got := h.apiPod(pod); got.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", got.Status.Phase)
	}
}
