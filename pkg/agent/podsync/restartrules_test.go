package podsync

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// restartOn gives container c restartPolicy Never and one rule restarting it on codes.
func restartOn(c *corev1.Container, codes ...int32) {
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
	c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: codes}}}
}

// TestContainerRestartRules: a container's restartPolicy and restartPolicyRules decide
// over the pod's restartPolicy whether it runs again after an exit, with the crash-loop
// back-off of any restart, as the kubelet's ShouldContainerBeRestarted; the pod's phase
// follows (getPhase).
func TestContainerRestartRules(t *testing.T) {
	t.Run("restarts on a matching exit code only", func(t *testing.T) {
		h := newHarness(t)
		job := agenttest.Pod("job", corev1.RestartPolicyNever, "app")
		restartOn(&job.Spec.Containers[0], 42)
		pod, st := h.start(job)
		h.Runtime.TakeCalls()

		h.exitAndSync(st, pod, "app", 42)
		h.wantCalls("after exit 42", "create app", "start app")
		got := h.apiPod(pod)
		if cs := agenttest.ContainerStatus(got, "app"); cs.RestartCount != 1 || cs.State.Running == nil {
			t.Fatalf("after exit 42: %+v", cs)
		}
		if got.Status.Phase != corev1.PodRunning {
			t.Errorf("phase %s after exit 42, want Running", got.Status.Phase)
		}

		// A second 42 backs off as any crash loop.
		h.exitAndSync(st, pod, "app", 42)
		h.wantCalls("during back-off")
		got = h.apiPod(pod)
		if cs := agenttest.ContainerStatus(got, "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoopBackOff {
			t.Fatalf("after a second exit 42: %+v, want CrashLoopBackOff", cs)
		}
		if got.Status.Phase != corev1.PodRunning {
			t.Errorf("phase %s during back-off, want Running", got.Status.Phase)
		}
		if !hasEvent(h.TakeEvents(), "Warning BackOff") {
			t.Error("no BackOff event")
		}
		h.Clock.Step(backoffInitial)
		h.sync(st, pod)
		h.wantCalls("after the back-off", "create app", "start app", "remove app") // the oldest app goes

		// Any other exit code ends it, and the pod with it.
		h.exitAndSync(st, pod, "app", 1)
		got = h.apiPod(pod)
		cs := agenttest.ContainerStatus(got, "app")
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 || cs.RestartCount != 2 {
			t.Errorf("after exit 1: %+v, want terminated with 2 restarts", cs)
		}
		if got.Status.Phase != corev1.PodFailed {
			t.Errorf("phase %s after exit 1, want Failed", got.Status.Phase)
		}
		h.wantCalls("after exit 1", "stop sandbox", "remove sandbox")
	})

	t.Run("the container's policy over the pod's", func(t *testing.T) {
		h := newHarness(t)
		web := agenttest.Pod("web", corev1.RestartPolicyAlways, "once", "server")
		web.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
		pod, st := h.start(web)
		h.Runtime.TakeCalls()

		h.exitAndSync(st, pod, "once", 0)
		h.wantCalls("after once exited")
		got := h.apiPod(pod)
		if cs := agenttest.ContainerStatus(got, "once"); cs.State.Terminated == nil || cs.RestartCount != 0 {
			t.Errorf("once: %+v, want terminated for good", cs)
		}
		if got.Status.Phase != corev1.PodRunning {
			t.Errorf("phase %s while server runs, want Running", got.Status.Phase)
		}
		// server restarts as the pod says; once stays exited.
		h.exitAndSync(st, pod, "server", 0)
		h.wantCalls("after server exited", "create server", "start server")
	})

	t.Run("a Never pod's init container retried on failure", func(t *testing.T) {
		h := newHarness(t)
		job := withInit(agenttest.Pod("job", corev1.RestartPolicyNever, "app"), "setup")
		job.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
		pod, st := h.start(job)
		h.Runtime.TakeCalls()

		h.exitAndSync(st, pod, "setup", 1)
		h.wantCalls("after setup failed", "create setup", "start setup")
		if got := h.apiPod(pod); got.Status.Phase != corev1.PodPending {
			t.Errorf("phase %s while setup is retried, want Pending", got.Status.Phase)
		}
		h.exitAndSync(st, pod, "setup", 0)
		h.wantCalls("after setup succeeded", "create app", "start app")
	})

	t.Run("an Always pod's init container that never restarts fails the pod", func(t *testing.T) {
		h := newHarness(t)
		web := withInit(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"), "setup")
		restartOn(&web.Spec.InitContainers[0], 42)
		pod, st := h.start(web)
		h.Runtime.TakeCalls()

		h.exitAndSync(st, pod, "setup", 42)
		h.wantCalls("after setup exited 42", "create setup", "start setup")
		h.Clock.Step(time.Second)
		h.exitAndSync(st, pod, "setup", 1)
		got := h.apiPod(pod)
		if got.Status.Phase != corev1.PodFailed {
			t.Errorf("phase %s after setup exited 1, want Failed", got.Status.Phase)
		}
		if cs := initStatusOf(got, "setup"); cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 {
			t.Errorf("setup: %+v, want terminated with 1", cs)
		}
		h.wantCalls("after setup exited 1", "stop sandbox", "remove sandbox")
	})
}
