package podsync

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/network"
)

// TestFailedCNIDelIsRetried: a pod whose CNI DEL fails keeps its sandbox and its API object
// until a later DEL succeeds.
func TestFailedCNIDelIsRetried(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	deleting := h.apiPod(pod)
	deleting.DeletionTimestamp = &metav1.Time{Time: h.Clock.Now()}
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](0)

	h.Network.TearDownErr = errors.New("plugin bridge failed")
	for range 2 {
		if err := h.syncer.TerminatePod(h.ctx, st, deleting, false); err == nil {
			t.Fatal("termination succeeded although CNI DEL failed")
		}
	}
	if h.Network.AttachedCount() != 1 {
		t.Fatal("network counted as torn down after a failed DEL")
	}
	if left, _ := h.Runtime.ListContainers(h.ctx, string(pod.UID)); len(sandboxesOf(left)) != 1 {
		t.Errorf("sandbox not kept for the retry: %+v", left)
	}
	if _, err := h.Client.CoreV1().Pods(pod.Namespace).Get(h.ctx, pod.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("pod object deleted before its network was torn down: %v", err)
	}

	h.Network.TearDownErr = nil
	if err := h.syncer.TerminatePod(h.ctx, st, deleting, false); err != nil {
		t.Fatal(err)
	}
	if h.Network.AttachedCount() != 0 {
		t.Error("network still attached after the successful DEL")
	}
	if _, err := h.Client.CoreV1().Pods(pod.Namespace).Get(h.ctx, pod.Name, metav1.GetOptions{}); err == nil {
		t.Error("pod object left after the successful DEL")
	}
}

// TestCNICheckOnSync: a running pod's network is checked at most once per netCheckPeriod;
// a failing CHECK starts the pod over with a new sandbox.
func TestCNICheckOnSync(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	h.sync(st, pod)
	if h.Network.Checks != 0 {
		t.Errorf("%d CHECKs right after ADD, want none", h.Network.Checks)
	}
	h.Clock.Step(netCheckPeriod + time.Second)
	h.sync(st, pod)
	h.sync(st, pod)
	if h.Network.Checks != 1 {
		t.Errorf("%d CHECKs in one period, want 1", h.Network.Checks)
	}
	before := h.Runtime.Named(string(pod.UID), "app")

	h.Network.CheckErr = errors.New("eth0 has no address")
	h.Clock.Step(netCheckPeriod + time.Second)
	h.sync(st, pod)
	if !slices.Contains(h.TakeEvents(), sandboxChanged) {
		t.Errorf("no event %q after a failed CHECK", sandboxChanged)
	}
	if after := h.Runtime.Named(string(pod.UID), "app"); len(after) != 1 || len(before) != 1 || after[0].ID == before[0].ID {
		t.Errorf("pod not started over after a failed CHECK: before %+v after %+v", before, after)
	}
	if h.Network.AttachedCount() != 1 {
		t.Errorf("%d sandboxes attached, want the new one only", h.Network.AttachedCount())
	}
}

// TestFinishedPodReleasedOnRetry: a finished pod whose CNI DEL failed is released by a later
// sync, which then reports it no longer ready to start containers, keeping its
// termination message.
func TestFinishedPodReleasedOnRetry(t *testing.T) {
	h := newHarness(t)
	job := agenttest.Pod("job", corev1.RestartPolicyNever, "app")
	job.Spec.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	pod, st := h.start(job)
	uid := string(pod.UID)
	if err := os.WriteFile(h.Runtime.Named(uid, "app")[0].TerminationLog, []byte("goodbye"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Clock.Step(time.Second)
	h.Runtime.Exit(uid, "app", 0)
	h.Network.TearDownErr = errors.New("plugin bridge failed")
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("sync succeeded although CNI DEL failed")
	}
	if got := h.apiPod(pod); got.Status.Phase != corev1.PodSucceeded || conditionStatus(got, corev1.PodReadyToStartContainers) != corev1.ConditionTrue {
		t.Fatalf("phase %s, PodReadyToStartContainers %s before the release, want Succeeded, True",
			got.Status.Phase, conditionStatus(got, corev1.PodReadyToStartContainers))
	}

	h.Network.TearDownErr = nil
	h.sync(st, pod)
	if h.Network.AttachedCount() != 0 {
		t.Fatal("network of the finished pod not torn down on the retry")
	}
	got := h.apiPod(pod)
	if c := conditionStatus(got, corev1.PodReadyToStartContainers); c != corev1.ConditionFalse {
		t.Errorf("PodReadyToStartContainers %s once released, want False", c)
	}
	if cs := agenttest.ContainerStatus(got, "app"); cs.State.Terminated == nil || cs.State.Terminated.Message != "goodbye" {
		t.Errorf("container status once released: %+v, want terminated with message goodbye", cs.State)
	}
}

// TestEvictedPodFoundAfterRestartLosesItsContainers: a pod the API shows evicted, found by
// a minilet that did not evict it (restarted since), is released and its exited
// containers removed, as the kubelet's HandlePodReconcile does for PodIsEvicted; a pod
// that simply finished keeps its container for its status and logs.
func TestEvictedPodFoundAfterRestartLosesItsContainers(t *testing.T) {
	for _, reason := range []string{EvictedReason, ""} {
		t.Run("reason "+reason, func(t *testing.T) {
			h := newHarness(t)
			pod, _ := h.start(agenttest.Pod("hog", corev1.RestartPolicyAlways, "app"))
			uid := string(pod.UID)
			h.Runtime.Exit(uid, "app", 137)
			ended := h.apiPod(pod)
			ended.Status.Phase, ended.Status.Reason = corev1.PodFailed, reason
			ended, err := h.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(h.ctx, ended, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			h.sync(newPodState(ended, apiTime(h.Clock.Now())), ended) // a new minilet's first sync
			left := h.Runtime.Named(uid, "app")
			if reason == EvictedReason && len(left) != 0 {
				t.Errorf("the evicted pod's exited container is still there: %+v", left)
			}
			if reason == "" && len(left) != 1 {
				t.Errorf("the failed pod's container is gone (%d left), want it kept", len(left))
			}
		})
	}
}

// TestNetworkNotReadyHoldsPods: while the pod network is not ready (no CNI installed yet),
// only hostNetwork pods start, as the kubelet's syncPod: another pod stays
// ContainerCreating with the kubelet's NetworkNotReady event and no sandbox, and starts
// once the network is ready.
func TestNetworkNotReadyHoldsPods(t *testing.T) {
	h := newHarness(t)
	h.Network.ReadyErr = network.ErrNotInitialized
	const want = "Warning NetworkNotReady network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
	if err := h.syncer.NetworkReady(); err == nil || "Warning NetworkNotReady network is not ready: "+err.Error() != want {
		t.Errorf("NetworkReady = %v, want the runtime's NetworkReady=false condition", err)
	}

	onHost := agenttest.Pod("on-host", corev1.RestartPolicyAlways, "app")
	onHost.Spec.HostNetwork = true
	onHost, hostSt := h.start(onHost)
	if cs := agenttest.ContainerStatus(h.apiPod(onHost), "app"); cs.State.Running == nil {
		t.Errorf("hostNetwork pod while the network is not ready: %+v, want running", cs.State)
	}

	pod, st := h.admit(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	h.TakeEvents()
	h.Runtime.TakeCalls()
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil || !strings.Contains(err.Error(), "network is not ready") {
		t.Errorf("sync while the network is not ready: %v, want network is not ready", err)
	}
	if events := h.TakeEvents(); !slices.Contains(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("runtime calls while the network is not ready: %q, want none", calls)
	}
	got := h.apiPod(pod)
	if cs := agenttest.ContainerStatus(got, "app"); got.Status.Phase != corev1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("pod while the network is not ready: %s %+v, want Pending and ContainerCreating", got.Status.Phase, cs.State)
	}

	h.Network.ReadyErr = nil
	h.sync(st, pod)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Running == nil {
		t.Errorf("pod once the network is ready: %+v, want running", cs.State)
	}
	h.sync(hostSt, onHost)
}
