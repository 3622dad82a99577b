package apiextensions

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
)

// Content and SetContent skip JSON: they must give what the JSON round trip gave.
func TestContentIsTheJSONRoundTrip(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC))
	obj := &Object{
		TypeMeta: metav1.TypeMeta{APIVersion: "bench.minik8s.io/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "u-1", ResourceVersion: "7", Generation: 3,
			CreationTimestamp: now, Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "bench.minik8s.io/v1",
				Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}}}},
		Spec:   map[string]any{"replicas": int64(3), "ratio": 0.5, "whole": float64(2), "list": []any{"x", int64(1), map[string]any{"k": true}}, "none": nil},
		Status: map[string]any{"ready": false},
		Fields: map[string]any{"data": map[string]any{"x": "y"}},
	}
	for name, o := range map[string]*Object{"full": obj, "empty": {}} {
		data, want := jsonRoundTrip(t, o)
		got, err := o.Content()
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: Content differs from the JSON round trip:\n%s", name, diff.Diff(want, got))
		}
		if got, ok := o.ToUnstructured().(map[string]any); !ok || !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: ToUnstructured differs from the JSON round trip:\n%s", name, diff.Diff(want, got))
		}
		var back, viaJSON Object
		if err := back.SetContent(want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &viaJSON); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(&back, &viaJSON) {
			t.Errorf("%s: SetContent differs from decoding the JSON:\n%s", name, diff.Diff(&viaJSON, &back))
		}
	}
	if err := new(Object).SetContent(map[string]any{"metadata": "x"}); err == nil {
		t.Error("SetContent took a metadata that is not an object")
	}
}

// jsonRoundTrip is o encoded, and decoded again into unstructured values with whole
// numbers as int64, as the custom resource store keeps them: what Content must give.
func jsonRoundTrip(t testing.TB, o *Object) ([]byte, map[string]any) {
	t.Helper()
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var content map[string]any
	if err := json.Unmarshal(data, &content); err != nil {
		t.Fatal(err)
	}
	toInt64(content)
	return data, content
}
