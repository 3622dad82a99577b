package podsync

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// TestPodInUserNamespaceRefused: a pod asking for a user namespace (hostUsers: false) gets
// no sandbox on a runtime without them (the node reports userNamespaces: false): it waits in
// ContainerCreating with the kubelet's FailedCreatePodSandBox event, as its user namespace
// manager refuses it, instead of running in the host's user namespace.
func TestPodInUserNamespaceRefused(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("userns", corev1.RestartPolicyAlways, "app")
	pod.Spec.HostUsers = ptr.To(false)
	pod, st := h.admit(pod)
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Error("sync of a pod in a user namespace succeeded")
	}
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("runtime calls for a pod in a user namespace: %q, want none", calls)
	}
	const want = "Warning FailedCreatePodSandBox Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if events := h.TakeEvents(); !slices.Contains(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	got := h.apiPod(pod)
	if cs := agenttest.ContainerStatus(got, "app"); got.Status.Phase != corev1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonContainerCreating {
		t.Errorf("phase %s, app %+v; want Pending, app waiting in ContainerCreating", got.Status.Phase, cs.State)
	}
}
