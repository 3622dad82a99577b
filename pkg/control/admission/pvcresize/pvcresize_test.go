package pvcresize

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestValidate: growing a claim is refused, in kube's words, unless it is bound and its
// class allows expansion; shrinking and other updates are not this plugin's business.
func TestValidate(t *testing.T) {
	expandable := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "expandable"}, Provisioner: "p", AllowVolumeExpansion: ptr.To(true)}
	fixed := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, Provisioner: "p"}
	p := admissiontest.Started(t, New, expandable, fixed)
	claim := func(class *string, phase corev1.PersistentVolumeClaimPhase, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	const notAllowed = `persistentvolumeclaims "data" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	for _, tc := range []struct {
		name     string
		old, new *corev1.PersistentVolumeClaim
		want     string
	}{
		{"grow, class allows", claim(ptr.To("expandable"), corev1.ClaimBound, "1Gi"), claim(ptr.To("expandable"), corev1.ClaimBound, "2Gi"), ""},
		{"grow, class does not allow", claim(ptr.To("fixed"), corev1.ClaimBound, "1Gi"), claim(ptr.To("fixed"), corev1.ClaimBound, "2Gi"), notAllowed},
		{"grow, no class", claim(nil, corev1.ClaimBound, "1Gi"), claim(nil, corev1.ClaimBound, "2Gi"), notAllowed},
		{"grow, class missing", claim(ptr.To("gone"), corev1.ClaimBound, "1Gi"), claim(ptr.To("gone"), corev1.ClaimBound, "2Gi"), notAllowed},
		{"grow, pending", claim(ptr.To("expandable"), corev1.ClaimPending, "1Gi"), claim(ptr.To("expandable"), corev1.ClaimPending, "2Gi"),
			`persistentvolumeclaims "data" is forbidden: Only bound persistent volume claims can be expanded`},
		{"shrink", claim(ptr.To("fixed"), corev1.ClaimBound, "2Gi"), claim(ptr.To("fixed"), corev1.ClaimBound, "1Gi"), ""},
		{"same size", claim(ptr.To("fixed"), corev1.ClaimBound, "1Gi"), claim(ptr.To("fixed"), corev1.ClaimBound, "1Gi"), ""},
	} {
		err := p.Validate(context.Background(), admissiontest.Attrs(t, generic.Update, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), "", tc.new, tc.old))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
