package podsync

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// TestPreStopRunsBeforeTheStopSignal: deleting a pod runs the preStop command in the
// container first; SIGTERM gets what is left of the grace period.
func TestPreStopRunsBeforeTheStopSignal(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo bye"}}}}
	pod, st := h.start(pod)
	h.Runtime.TakeCalls()

	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](10)
	if err := h.syncer.TerminatePod(h.ctx, st, deleting, false); err != nil {
		t.Fatal(err)
	}
	calls := h.Runtime.TakeCalls()
	hook, stop := slices.Index(calls, "exec app sh -c echo bye"), slices.Index(calls, "stop app")
	if hook < 0 || stop < 0 || hook > stop {
		t.Errorf("calls %q: want the preStop exec before the stop", calls)
	}
	if g := h.Runtime.StopGrace["app"]; g != 10*time.Second {
		t.Errorf("SIGTERM grace %s, want the 10 s left", g)
	}
}

// TestFailedPreStopHook: a failing preStop hook is a Warning FailedPreStopHook event that
// says only "PreStopHook failed" (the kubelet keeps the hook's output out of events, which
// may hold secrets), and the container is stopped all the same.
func TestFailedPreStopHook(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}}}
	pod, st := h.start(pod)
	h.Runtime.ExecFn = func(container string, cmd []string) (int, string) { return 3, "token=secret" }
	h.TakeEvents()
	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](10)
	if err := h.syncer.TerminatePod(h.ctx, st, deleting, true); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(h.Runtime.TakeCalls(), "stop app") {
		t.Error("the container was not stopped after its failed preStop hook")
	}
	if ev := h.TakeEvents(); !slices.Contains(ev, "Warning FailedPreStopHook PreStopHook failed") {
		t.Errorf("events %q, want \"Warning FailedPreStopHook PreStopHook failed\"", ev)
	}
}

// TestFailedPostStartHookKillsTheContainer: the container is killed with a
// FailedPostStartHook event "PostStartHook failed" (the kubelet keeps the hook's output,
// which may hold secrets, out of the event; the waiting message has it), and restarts
// by its policy.
func TestFailedPostStartHookKillsTheContainer(t *testing.T) {
	h := newHarness(t)
	h.Runtime.ExecFn = func(container string, cmd []string) (int, string) { return 3, "no config" }
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"setup"}}}}
	pod, st := h.admit(pod)
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("sync with a failing postStart hook reported no error")
	}
	calls := h.Runtime.TakeCalls()
	if i := slices.Index(calls, "exec app setup"); i < 0 || !slices.Contains(calls[i:], "stop app") {
		t.Errorf("calls %q: want the hook, then the kill", calls)
	}
	var found, killing bool
	for _, e := range h.TakeEvents() {
		found = found || e == "Warning FailedPostStartHook PostStartHook failed"
		killing = killing || e == "Normal Killing FailedPostStartHook"
	}
	if !found {
		t.Error(`no "Warning FailedPostStartHook PostStartHook failed" event`)
	}
	if !killing {
		t.Error(`no "Normal Killing FailedPostStartHook" event, the kubelet's killContainer's`)
	}
	// Until it restarts, the container waits with the kubelet's reason for the failed start
	// (kubectl get pods shows PostStartHookError).
	if w := agenttest.ContainerStatus(h.apiPod(pod), "app").State.Waiting; w == nil || w.Reason != "PostStartHookError" || !strings.Contains(w.Message, "no config") {
		t.Errorf("waiting %+v after the failed hook, want PostStartHookError with the hook's message", w)
	}
	h.Runtime.ExecFn = nil
	h.Clock.Step(time.Second)
	h.sync(st, pod)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Running == nil || cs.RestartCount != 1 {
		t.Errorf("after a good hook: %+v", cs)
	}
}

// TestChangedSpecRunsPreStop: a container restarted for a changed spec is killed as the
// kubelet's killContainer kills it: its preStop hook first, then SIGTERM with what is left
// of the pod's grace period.
func TestChangedSpecRunsPreStop(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}}}
	pod, st := h.start(pod)
	h.Runtime.TakeCalls()

	changed := h.apiPod(pod)
	changed.Spec.Containers[0].Image = "localhost/minik8s/netexec:v1"
	if _, err := h.Client.CoreV1().Pods(pod.Namespace).Update(h.ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Step(time.Second)
	h.sync(st, pod)
	calls := h.Runtime.TakeCalls()
	preStop, stop := slices.Index(calls, "exec app drain"), slices.Index(calls, "stop app")
	if preStop < 0 || stop < preStop {
		t.Errorf("calls %q: want the preStop hook, then the stop", calls)
	}
	if g := h.Runtime.StopGrace["app"]; g != 20*time.Second {
		t.Errorf("SIGTERM grace %s, want the pod's 20 s", g)
	}
}

// TestFailedPostStartHookKill: the kill after a failed postStart hook is the kubelet's
// killContainer: the container's preStop hook first, then SIGTERM with the pod's grace
// period; with terminationGracePeriodSeconds 0 no preStop hook (it runs only with grace
// left) and SIGTERM gets the kubelet's floor of 2 s.
func TestFailedPostStartHookKill(t *testing.T) {
	for _, tc := range []struct {
		grace     int64
		preStop   bool
		stopGrace time.Duration
	}{{20, true, 20 * time.Second}, {0, false, 2 * time.Second}} {
		h := newHarness(t)
		h.Runtime.ExecFn = func(container string, cmd []string) (int, string) {
			if cmd[0] == "setup" {
				return 3, "no config"
			}
			return 0, ""
		}
		pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
		pod.Spec.TerminationGracePeriodSeconds = ptr.To(tc.grace)
		pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
			PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"setup"}}},
			PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}},
		}
		pod, st := h.admit(pod)
		if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
			t.Fatal("sync with a failing postStart hook reported no error")
		}
		calls := h.Runtime.TakeCalls()
		hook, preStop, stop := slices.Index(calls, "exec app setup"), slices.Index(calls, "exec app drain"), slices.Index(calls, "stop app")
		if hook < 0 || stop < hook || (preStop >= 0) != tc.preStop || (tc.preStop && (preStop < hook || stop < preStop)) {
			t.Errorf("grace %d: calls %q, want the postStart hook, the preStop hook (%v), then the kill", tc.grace, calls, tc.preStop)
		}
		if g := h.Runtime.StopGrace["app"]; g != tc.stopGrace {
			t.Errorf("grace %d: SIGTERM grace %s, want %s", tc.grace, g, tc.stopGrace)
		}
	}
}

// TestPreStopHookFindsThePodInTheRuntime: the pod address an HTTP preStop hook goes to
// comes from the runtime's sandbox, as the kubelet's runHTTPHandler gets it, so a pod whose
// API status has no address yet (killed right after its first start) still gets its hook.
func TestPreStopHookFindsThePodInTheRuntime(t *testing.T) {
	h := newHarness(t)
	pod, _ := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	want := h.apiPod(pod).Status.PodIP
	if want == "" {
		t.Fatal("the started pod has no address")
	}
	pod.Status.PodIP, pod.Status.PodIPs = "", nil
	if got := h.syncer.runtimePodIP(h.ctx, pod); got != want {
		t.Errorf("hook address %q, want the sandbox's %q", got, want)
	}
}
