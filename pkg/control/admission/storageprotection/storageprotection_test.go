package storageprotection

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFinalizersAdded(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Finalizers: []string{"other"}}}
	a := admissiontest.Attrs(t, generic.Create, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), "", pvc, nil)
	if err := (Plugin{}).Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: []string{PVFinalizer}}}
	b := admissiontest.Attrs(t, generic.Create, corev1.SchemeGroupVersion.WithResource("persistentvolumes"), "", pv, nil)
	if err := (Plugin{}).Admit(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(pvc.Finalizers) != 2 || pvc.Finalizers[1] != PVCFinalizer {
		t.Errorf("claim finalizers %v", pvc.Finalizers)
	}
	if len(pv.Finalizers) != 1 {
		t.Errorf("volume finalizers %v: the one it had is not added twice", pv.Finalizers)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c := admissiontest.Attrs(t, generic.Create, corev1.SchemeGroupVersion.WithResource("pods"), "", pod, nil)
	if err := (Plugin{}).Admit(context.Background(), c); err != nil || len(pod.Finalizers) != 0 {
		t.Errorf("a pod gets no finalizer: %v %v", pod.Finalizers, err)
	}
}
