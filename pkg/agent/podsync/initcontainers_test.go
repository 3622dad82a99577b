package podsync

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/runtime"
)

func withInit(pod *corev1.Pod, names ...string) *corev1.Pod {
	for _, n := range names {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name: n, Image: "localhost/minik8s/busybox:v1", Command: []string{"true"}, ImagePullPolicy: corev1.PullIfNotPresent,
		})
	}
	return pod
}

func initStatusOf(pod *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

// TestInitContainersRunInOrderBeforeTheApp: each init container runs alone to success,
// the statuses read as kubectl's Init:N/M expects, then the app starts.
func TestInitContainersRunInOrderBeforeTheApp(t *testing.T) {
	h := newHarness(t)
	pod, st := h.admit(withInit(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"), "first", "second"))

	h.sync(st, pod)
	h.wantCalls("first sync", "sandbox web", "pull localhost/minik8s/busybox:v1", "create first", "start first")
	got := h.apiPod(pod)
	if got.Status.Phase != corev1.PodPending || conditionStatus(got, corev1.PodInitialized) != corev1.ConditionFalse {
		t.Errorf("while init runs: phase %s, Initialized %s", got.Status.Phase, conditionStatus(got, corev1.PodInitialized))
	}
	if w := initStatusOf(got, "second").State.Waiting; w == nil || w.Reason != reasonPodInitializing {
		t.Errorf("second init container waits with %+v, want PodInitializing", w)
	}
	if w := agenttest.ContainerStatus(got, "app").State.Waiting; w == nil || w.Reason != reasonPodInitializing {
		t.Errorf("app container waits with %+v, want PodInitializing", w)
	}

	h.sync(st, pod) // first still runs: nothing new starts
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Fatalf("sync while the first init container runs: %q", calls)
	}
	h.exitAndSync(st, pod, "first", 0)
	h.wantCalls("after first succeeded", "create second", "start second")
	if cs := initStatusOf(h.apiPod(pod), "first"); cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" || !cs.Ready {
		t.Errorf("status of the finished init container: %+v", cs)
	}
	h.exitAndSync(st, pod, "second", 0)
	h.wantCalls("after both succeeded", "create app", "start app")
	got = h.apiPod(pod)
	if got.Status.Phase != corev1.PodRunning || conditionStatus(got, corev1.PodInitialized) != corev1.ConditionTrue ||
		conditionStatus(got, corev1.PodReady) != corev1.ConditionTrue {
		t.Errorf("after init: phase %s conditions %+v", got.Status.Phase, got.Status.Conditions)
	}

	// Init containers never run again once the app has run, even if it restarts.
	h.exitAndSync(st, pod, "app", 1)
	h.wantCalls("app restart", "create app", "start app")
}

// TestFailedInitContainer: it is retried with back-off (Init:CrashLoopBackOff) unless
// the pod's restartPolicy is Never, which fails the pod.
func TestFailedInitContainer(t *testing.T) {
	t.Run("retried", func(t *testing.T) {
		h := newHarness(t)
		pod, st := h.start(withInit(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"), "setup"))
		uid := string(pod.UID)
		for i := range 2 {
			h.exitAndSync(st, pod, "setup", 1)
			if i == 0 {
				if cs := initStatusOf(h.apiPod(pod), "setup"); cs.RestartCount != 1 || cs.State.Running == nil {
					t.Fatalf("first failure not retried at once: %+v", cs)
				}
			}
		}
		got := h.apiPod(pod)
		cs := initStatusOf(got, "setup")
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoopBackOff || cs.LastTerminationState.Terminated == nil {
			t.Errorf("second failure: %+v, want CrashLoopBackOff", cs)
		}
		if got.Status.Phase != corev1.PodPending {
			t.Errorf("phase %s, want Pending", got.Status.Phase)
		}
		if len(h.Runtime.Named(uid, "app")) != 0 {
			t.Error("app container started although init failed")
		}
	})
	t.Run("never", func(t *testing.T) {
		h := newHarness(t)
		pod, st := h.start(withInit(agenttest.Pod("job", corev1.RestartPolicyNever, "app"), "setup"))
		uid := string(pod.UID)
		h.exitAndSync(st, pod, "setup", 2)
		got := h.apiPod(pod)
		if got.Status.Phase != corev1.PodFailed {
			t.Errorf("phase %s, want Failed", got.Status.Phase)
		}
		if len(h.Runtime.Named(uid, "app")) != 0 || len(h.Runtime.Named(uid, "setup")) != 1 {
			t.Error("a failed init container of a Never pod was retried or the app started")
		}
	})
}

// TestSidecarInitContainerKeepsRunning: an init container with restartPolicy Always
// starts before the next one and stays up beside the app, restarted when it exits.
func TestSidecarInitContainerKeepsRunning(t *testing.T) {
	h := newHarness(t)
	pod := withInit(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"), "proxy", "setup")
	pod.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	pod, st := h.start(pod)
	h.sync(st, pod)
	h.wantCalls("first sync", "sandbox web", "pull localhost/minik8s/busybox:v1", "create proxy", "start proxy", "create setup", "start setup")
	h.exitAndSync(st, pod, "setup", 0)
	h.wantCalls("after setup", "create app", "start app")
	h.exitAndSync(st, pod, "proxy", 0)
	h.wantCalls("sidecar exit", "create proxy", "start proxy")
	got := h.apiPod(pod)
	if cs := initStatusOf(got, "proxy"); cs.State.Running == nil || cs.RestartCount != 1 || !cs.Ready {
		t.Errorf("sidecar status %+v", cs)
	}
	if got.Status.Phase != corev1.PodRunning || conditionStatus(got, corev1.PodInitialized) != corev1.ConditionTrue {
		t.Errorf("phase %s, Initialized %s", got.Status.Phase, conditionStatus(got, corev1.PodInitialized))
	}
}

// TestContainerEventsPointAtTheirSpecList: an event about a container names it where the
// pod spec has it, as the kubelet's fieldPath does (kubectl get events -o wide shows it
// as SUBOBJECT): spec.containers{main}, spec.initContainers{side},
// spec.ephemeralContainers{debugger}.
func TestContainerEventsPointAtTheirSpecList(t *testing.T) {
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "main")
	pod.Spec.InitContainers = []corev1.Container{{Name: "side"}}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}}}
	for name, want := range map[string]string{
		"main":     "spec.containers{main}",
		"side":     "spec.initContainers{side}",
		"debugger": "spec.ephemeralContainers{debugger}",
	} {
		if got := containerRef(pod, name).FieldPath; got != want {
			t.Errorf("%s: fieldPath %q, want %q", name, got, want)
		}
	}
}

// TestSidecarKeepsAFinishedPodRunningUntilStopped: once the app containers of a Never pod
// have finished, the sync writes the pod Running while its sidecar still runs, stops the
// sidecar and only then writes it Succeeded, as the kubelet's SyncPod (getPhase counts a
// running sidecar; computePodActions kills the pod), so a Job with a sidecar completes
// when its pod has stopped.
func TestSidecarKeepsAFinishedPodRunningUntilStopped(t *testing.T) {
	h := newHarness(t)
	pod := withInit(agenttest.Pod("job", corev1.RestartPolicyNever, "app"), "proxy")
	pod.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	pod, st := h.start(pod)
	h.sync(st, pod)
	var phases []corev1.PodPhase
	h.Client.PrependReactor("update", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		if u, ok := action.(clienttesting.UpdateAction); ok && u.GetSubresource() == "status" {
			phases = append(phases, u.GetObject().(*corev1.Pod).Status.Phase)
		}
		return false, nil, nil
	})
	h.exitAndSync(st, pod, "app", 0)
	if !slices.Equal(phases, []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded}) {
		t.Errorf("phases written as the app finished: %v, want Running (the sidecar running), then Succeeded", phases)
	}
	for _, c := range h.Runtime.Named(string(pod.UID), "proxy") {
		if c.State != runtime.StateExited {
			t.Errorf("sidecar %s is %s after the pod finished, want exited", c.ID, c.State)
		}
	}
	if got := h.apiPod(pod); got.Status.Phase != corev1.PodSucceeded {
		t.Errorf("phase %s, want Succeeded", got.Status.Phase)
	}
}
