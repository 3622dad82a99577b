package ephemeral

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-helpers/storage/ephemeral"
)

// A claim the informer has not seen yet, but which the pod's earlier sync created, is the
// pod's: its create meets AlreadyExists, and the claim read from the API is checked instead
// (a pod's second sync, asked by the scheduler's status write, came before the claim's
// watch event and warned "already exists").
func TestClaimCreatedButNotYetSeen(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}}}}}
	v := &pod.Spec.Volumes[0]
	owned := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: ephemeral.VolumeClaimName(pod, v), Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))}}}
	foreign := owned.DeepCopy()
	foreign.OwnerReferences = nil
	for _, tc := range []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		wantErr bool
	}{
		{"owned by the pod", owned, false},
		{"owned by nobody", foreign, true},
	} {
		client := fake.NewClientset(tc.claim) // in the API, not in the (unstarted) informers
		factory := informers.NewSharedInformerFactory(client, 0)
		c, err := New(client, factory.Core().V1().Pods(), factory.Core().V1().PersistentVolumeClaims(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ensureClaim(t.Context(), pod, v); (err != nil) != tc.wantErr {
			t.Errorf("%s: %v, want an error: %t", tc.name, err, tc.wantErr)
		}
	}
}
