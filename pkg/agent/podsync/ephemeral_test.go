package podsync

import (
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// An ephemeral container added to a running pod starts once in its sandbox, in its
// target's PID namespace, is reported in ephemeralContainerStatuses (never ready), and is
// not restarted after it exits, whatever the pod's restart policy.
func TestEphemeralContainerStartsOnceInTheTargetsPIDNamespace(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	h.Runtime.TakeCalls()

	live := h.apiPod(pod)
	live.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "localhost/minik8s/busybox:v1", Command: []string{"sh"},
			ImagePullPolicy: corev1.PullIfNotPresent, Stdin: true, TTY: true},
		TargetContainerName: "app",
	}}
	if _, err := h.Client.CoreV1().Pods(live.Namespace).Update(h.ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(st, pod)
	h.wantCalls("for the new ephemeral container", "create dbg", "start dbg")
	if target, app := h.Runtime.PIDTargets["dbg"], h.Runtime.Named(string(pod.UID), "app")[0].ID; target != app {
		t.Errorf("the debug container joins the PID namespace of %q, want app's %q", target, app)
	}
	got := h.apiPod(pod)
	if len(got.Status.EphemeralContainerStatuses) != 1 {
		t.Fatalf("ephemeralContainerStatuses: %+v", got.Status.EphemeralContainerStatuses)
	}
	if cs := got.Status.EphemeralContainerStatuses[0]; cs.Name != "dbg" || cs.State.Running == nil || cs.Ready || cs.Started != nil || cs.ContainerID == "" {
		t.Errorf("status of the running debug container: %+v", cs)
	}
	// As the kubelet's: empty resources (its spec may set none), no allocatedResources.
	if cs := got.Status.EphemeralContainerStatuses[0]; cs.Resources == nil || !apiequality.Semantic.DeepEqual(*cs.Resources, corev1.ResourceRequirements{}) || cs.AllocatedResources != nil {
		t.Errorf("resources of the debug container: %v, allocated %v; want {} and none", cs.Resources, cs.AllocatedResources)
	}
	if got.Status.Phase != corev1.PodRunning || conditionStatus(got, corev1.PodReady) != corev1.ConditionTrue {
		t.Errorf("the pod with a debug container: phase %s, Ready %s", got.Status.Phase, conditionStatus(got, corev1.PodReady))
	}

	h.Runtime.Exit(string(pod.UID), "dbg", 1)
	h.sync(st, pod)
	h.sync(st, pod)
	if calls := h.Runtime.TakeCalls(); slices.ContainsFunc(calls, func(c string) bool { return c == "create dbg" || c == "remove dbg" }) {
		t.Errorf("the exited debug container was restarted or removed: %q", calls)
	}
	got = h.apiPod(pod)
	if cs := got.Status.EphemeralContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 || cs.RestartCount != 0 {
		t.Errorf("status of the exited debug container: %+v", cs)
	}

	// A new sandbox starts the app again, not the debug container.
	h.Runtime.Exit(string(pod.UID), "sandbox", 0)
	h.sync(st, pod)
	if calls := h.Runtime.TakeCalls(); !slices.Contains(calls, "start app") || slices.Contains(calls, "create dbg") || slices.Contains(calls, "remove dbg") {
		t.Errorf("calls after the sandbox died: %q, want app started again and dbg left alone", calls)
	}
	if cs := h.apiPod(pod).Status.EphemeralContainerStatuses[0]; cs.State.Terminated == nil {
		t.Errorf("status of the debug container after a new sandbox: %+v", cs)
	}
}

// Without a running target the ephemeral container is not started: it waits with the
// kubelet's CreateContainerConfigError, and starts once the target runs.
func TestEphemeralContainerWaitsForItsTarget(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("web", corev1.RestartPolicyNever, "app")
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "localhost/minik8s/busybox:v1", ImagePullPolicy: corev1.PullIfNotPresent},
		TargetContainerName:      "app",
	}}
	pod, st := h.admit(pod)
	h.Runtime.StartErr = os.ErrPermission
	_, _ = h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)) // app fails to start
	if cs := h.apiPod(pod).Status.EphemeralContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || len(h.Runtime.Named(string(pod.UID), "dbg")) != 0 ||
		cs[0].State.Waiting.Reason != "CreateContainerConfigError" || cs[0].State.Waiting.Message != "unable to find target container app" {
		t.Errorf("debug container without its target: %+v", cs)
	}
	if cs := h.apiPod(pod).Status.EphemeralContainerStatuses[0]; cs.Resources != nil {
		t.Errorf("resources of a debug container never made: %v, want none", cs.Resources)
	}
}
