package podsync

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// failedMounts are the FailedMount events among events.
func failedMounts(events []string) []string {
	return slices.DeleteFunc(events, func(e string) bool { return !strings.HasPrefix(e, "Warning FailedMount ") })
}

// TestUnboundClaimIsUnableToMountAtEachSync: a pod whose claim is not bound yet gets, at
// each sync, the kubelet's SyncPod event for what WaitForAttachAndMount returned at once
// (its desired state's pod error), and no MountVolume.SetUp event for that volume, which
// the kubelet never takes; once the claim is bound the pod starts.
func TestUnboundClaimIsUnableToMountAtEachSync(t *testing.T) {
	h := newHarness(t)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "claim-uid"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Data: map[string]string{"key": "v1"}}
	if _, err := h.Client.CoreV1().ConfigMaps("default").Create(h.ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client.CoreV1().PersistentVolumeClaims("default").Create(h.ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}, {Name: "data", MountPath: "/data"}}
	pod, st := h.admit(pod)

	want := []string{`Warning FailedMount Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], ` +
		`failed to process volumes=[data]: error processing PVC default/data: PVC is not bound`}
	for i := range 2 { // each sync, with no back-off between
		if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
			t.Fatalf("sync %d succeeded with the claim unbound", i)
		}
		if got := failedMounts(h.TakeEvents()); !slices.Equal(got, want) {
			t.Errorf("sync %d: FailedMount events %q, want %q", i, got, want)
		}
		if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
			t.Errorf("sync %d: app %+v, want ContainerCreating", i, cs.State)
		}
	}

	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.TempDir()}},
		ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: "data", UID: claim.UID}}}
	if _, err := h.Client.CoreV1().PersistentVolumes().Create(h.ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim.Spec.VolumeName, claim.Status.Phase = pv.Name, corev1.ClaimBound
	if _, err := h.Client.CoreV1().PersistentVolumeClaims("default").Update(h.ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(st, pod)
	if got := failedMounts(h.TakeEvents()); len(got) > 0 {
		t.Errorf("FailedMount events once bound: %q", got)
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Running == nil {
		t.Errorf("app once bound: %+v, want running", cs.State)
	}
}

// TestMountTimeoutIsNoEvent: a pod whose ConfigMap is missing gets the MountVolume.SetUp
// events only, however long it waits: the kubelet's SyncPod records no event when
// WaitForAttachAndMount's 2m3s ran out, as wait.Interrupted holds for the
// context.DeadlineExceeded that function's error wraps.
func TestMountTimeoutIsNoEvent(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "late"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}
	pod, st := h.admit(pod)
	for range 30 { // 5 min of syncs, 10 s apart as the pod workers retry a failed one
		if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
			t.Fatal("sync succeeded without the pod's ConfigMap")
		}
		for _, e := range failedMounts(h.TakeEvents()) {
			if e != `Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "late" not found` {
				t.Errorf("at %s: event %q, want only MountVolume.SetUp ones", h.Clock.Now(), e)
			}
		}
		h.Clock.Step(10 * time.Second)
	}
}
