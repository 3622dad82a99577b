package trim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func managed() []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}}
}

func TestManagedFieldsDropsThemFromTypedAndMetadataObjects(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}, ManagedFields: managed()}}
	partial := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "q", ManagedFields: managed()}}
	for _, obj := range []metav1.Object{pod, partial} {
		out, err := ManagedFields(obj)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(metav1.Object)
		if got.GetManagedFields() != nil {
			t.Errorf("%s: managedFields kept: %v", got.GetName(), got.GetManagedFields())
		}
		if got.GetName() == "" {
			t.Errorf("the rest of the object was lost: %#v", out)
		}
	}
	if pod.Labels["a"] != "b" {
		t.Errorf("labels changed: %v", pod.Labels)
	}
}

func TestManagedFieldsPassesOtherValuesThrough(t *testing.T) {
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: &corev1.Pod{}}
	for _, in := range []any{tombstone, "not an object", nil} {
		out, err := ManagedFields(in)
		if err != nil {
			t.Fatalf("%#v: %v", in, err)
		}
		if out != in {
			t.Errorf("%#v came back as %#v", in, out)
		}
	}
}
