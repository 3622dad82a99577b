package pvbinder

import (
	"context"
	"log/slog"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// TestVolumeOfAClaimBoundElsewhereIsUnbound: a volume that points at a claim bound to
// another volume (a bind that hit a conflict half way and was retried on a stale cache)
// is freed, as kube's syncVolume does: the claimRef goes when the controller set it, only
// its UID when a user pre-bound it; either way the volume is Available again.
func TestVolumeOfAClaimBoundElsewhereIsUnbound(t *testing.T) {
	for _, tc := range []struct {
		name         string
		annotations  map[string]string
		wantClaimRef string
	}{
		{"bound by the controller", map[string]string{annBoundByController: "yes"}, "<nil>"},
		{"pre-bound by a user", nil, "default/data uid="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "c1"},
				Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "other"}}
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "spare", Annotations: tc.annotations},
				Spec:   corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data", UID: "c1"}},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
			client := fake.NewClientset(pvc, pv)
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, factory.Core().V1().PersistentVolumes(), factory.Core().V1().PersistentVolumeClaims(),
				factory.Core().V1().Nodes(), factory.Storage().V1().StorageClasses(), record.NewFakeRecorder(10), slog.Default())
			if err != nil {
				t.Fatal(err)
			}
			ctx := controllertest.StartInformers(t, factory)
			if _, err := c.syncVolume(ctx, "spare"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumes().Get(context.Background(), "spare", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			claimRef := "<nil>"
			if r := got.Spec.ClaimRef; r != nil {
				claimRef = r.Namespace + "/" + r.Name + " uid=" + string(r.UID)
			}
			if claimRef != tc.wantClaimRef || got.Status.Phase != corev1.VolumeAvailable || got.Annotations[annBoundByController] != "" {
				t.Errorf("claimRef %s, phase %s, bound-by-controller %q; want claimRef %s, Available, none",
					claimRef, got.Status.Phase, got.Annotations[annBoundByController], tc.wantClaimRef)
			}
		})
	}
}
