package volumeprotection

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/storageprotection"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestUsesClaimShutDownPod: as kube's podUsesPVCForDeletion, a pod deleted with no grace
// period no longer holds its ephemeral volume's claim, but still holds a claim it names.
func TestUsesClaimShutDownPod(t *testing.T) {
	zero := int64(0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p", DeletionTimestamp: &metav1.Time{}, DeletionGracePeriodSeconds: &zero},
		Spec: corev1.PodSpec{NodeName: "n1", Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		}}}
	ref := *metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
	scratch := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "p-scratch", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{ref}}}
	data := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"}}
	if usesClaim(pod, scratch) {
		t.Error("a shut-down pod holds its ephemeral volume's claim")
	}
	if !usesClaim(pod, data) {
		t.Error("a shut-down pod that still exists does not hold the claim it names")
	}
}

// TestClaimFinalizer follows kube's pvc-protection controller (processPVC and
// podUsesPVCForDeletion): a claim being deleted is kept while a scheduled pod names it,
// finished or not, and let go when only an unscheduled pod names it (the kubelet never
// starts a pod whose claim is being deleted) or when an ephemeral volume's claim of that
// name is not the pod's; a claim not being deleted that lost its finalizer gets it back.
func TestClaimFinalizer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	now := metav1.Now()
	claim := func(name string, deleting bool, owner *corev1.Pod) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Finalizers: []string{storageprotection.PVCFinalizer}}}
		if deleting {
			pvc.DeletionTimestamp = &now
		}
		if owner != nil {
			pvc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("Pod"))}
		}
		return pvc
	}
	pod := func(name, node string, phase corev1.PodPhase, vol corev1.VolumeSource) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec:   corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "v", VolumeSource: vol}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	pvcVol := func(name string) corev1.VolumeSource {
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
	}
	ephemeralVol := corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}
	mine := pod("mine", "n1", corev1.PodRunning, ephemeralVol)
	unfinalized := claim("unfinalized", false, nil)
	unfinalized.Finalizers = nil
	objs := []runtime.Object{
		pod("pending", "", corev1.PodPending, pvcVol("unscheduled")), claim("unscheduled", true, nil),
		pod("done", "n1", corev1.PodSucceeded, pvcVol("finished")), claim("finished", true, nil),
		pod("other", "n1", corev1.PodRunning, ephemeralVol), claim("other-v", true, nil),
		mine, claim("mine-v", true, mine),
		unfinalized,
	}
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := NewClaims(client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().Pods(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	for name, want := range map[string]bool{"unscheduled": false, "finished": true, "other-v": false, "mine-v": true, "unfinalized": true} {
		if _, err := c.sync(ctx, "ns/"+name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
		pvc, err := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(pvc.Finalizers, storageprotection.PVCFinalizer); got != want {
			t.Errorf("claim %s has the finalizer: %v, want %v", name, got, want)
		}
	}
}

// TestVolumeFinalizer: as kube's pv-protection controller, a volume not being deleted that
// lost its finalizer gets it back; one being deleted and not Bound loses it.
func TestVolumeFinalizer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	now := metav1.Now()
	bare := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	going := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &now,
		Finalizers: []string{storageprotection.PVFinalizer}}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}
	client := fake.NewClientset(bare, going)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := NewVolumes(client, f.Core().V1().PersistentVolumes(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	for name, want := range map[string]bool{"bare": true, "going": false} {
		if _, err := c.sync(ctx, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(pv.Finalizers, storageprotection.PVFinalizer); got != want {
			t.Errorf("volume %s has the finalizer: %v, want %v", name, got, want)
		}
	}
}
