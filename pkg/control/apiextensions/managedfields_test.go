package apiextensions

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
)

// managedObject is a custom resource whose managed fields are not in the form their round
// trip through unstructured values gives: keys out of encoding/json's order (list keys in
// the field manager's numeric order), characters it escapes, a time below the second.
func managedObject() *Object {
	now := metav1.NewTime(time.Date(2026, 11, 29, 13, 0, 0, 123456789, time.UTC))
	fields := `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:ports":{"k:{\"port\":80}":{".":{},"f:port":{}},"k:{\"port\":100}":{".":{},"f:port":{}}},"f:a<b":{}}}`
	return &Object{
		TypeMeta: metav1.TypeMeta{APIVersion: "bench.example.com/v1", Kind: "Thing0"},
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", Labels: map[string]string{"app": "a"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "bench.example.com/v1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}},
				{Manager: "s", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "bench.example.com/v1", Subresource: "status"},
			}},
		Spec:   map[string]any{"ports": []any{map[string]any{"port": int64(80)}, map[string]any{"port": int64(100)}}},
		Status: map[string]any{"ready": true},
	}
}

// Content decodes the managed fields as the JSON round trip does, converted or remembered.
func TestContentOfManagedFields(t *testing.T) {
	data, err := json.Marshal(managedObject())
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	toInt64(want)
	for i := range 2 {
		got, err := managedObject().Content()
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("pass %d: Content differs from the JSON round trip:\n%s", i, diff.Diff(want, got))
		}
		// What a caller changes is its own.
		got["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["fieldsV1"].(map[string]any)["f:x"] = map[string]any{}
	}
}

// mutate gives the managed fields the round trip through unstructured values gave them
// (the bytes a custom resource has always been stored with), converted or remembered, and
// lets the status strategy's way of putting them back stand.
func TestMutateKeepsManagedFieldsAsTheRoundTripMadeThem(t *testing.T) {
	roundTrip := func(o *Object) *Object {
		c, err := o.Content()
		if err != nil {
			t.Fatal(err)
		}
		out := &Object{}
		if err := out.SetContent(c); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := roundTrip(managedObject()).ManagedFields
	if string(want[0].FieldsV1.Raw) == string(managedObject().ManagedFields[0].FieldsV1.Raw) {
		t.Fatal("the test's managed fields are already in their round trip's form")
	}
	for i := range 2 { // converted, then remembered
		obj := managedObject()
		mutate(obj, func(u *unstructured.Unstructured) { u.SetGeneration(1) })
		if obj.Generation != 1 {
			t.Fatal("mutate lost the change")
		}
		if !equality.Semantic.DeepEqual(obj.ManagedFields, want) {
			t.Errorf("pass %d: managed fields differ from the round trip's:\n%s", i, diff.Diff(want, obj.ManagedFields))
		}
	}

	// The status strategy copies the old object and puts back the new one's managed fields.
	obj, old := managedObject(), managedObject()
	old.ManagedFields = old.ManagedFields[1:]
	o := toUnstructured(old)
	mutate(obj, func(u *unstructured.Unstructured) {
		managed := u.GetManagedFields()
		*u = *o.DeepCopy()
		u.SetManagedFields(managed)
	})
	if !equality.Semantic.DeepEqual(obj.ManagedFields, want) {
		t.Errorf("status: managed fields differ from the round trip's:\n%s", diff.Diff(want, obj.ManagedFields))
	}
	// ... and one that sets others keeps those.
	obj = managedObject()
	mutate(obj, func(u *unstructured.Unstructured) { u.SetManagedFields(old.ManagedFields) })
	if !equality.Semantic.DeepEqual(obj.ManagedFields, old.ManagedFields) {
		t.Errorf("set: managed fields are not the ones set:\n%s", diff.Diff(old.ManagedFields, obj.ManagedFields))
	}
}
