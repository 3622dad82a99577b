package apiextensions

import (
	"encoding/json"
	"strings"
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
	_, want := jsonRoundTrip(t, managedObject())
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

// A custom resource created through the handler keeps managed fields in the form their
// round trip through unstructured values gives (encoding/json's order of the decoded
// fields), the bytes custom resources have always been stored with; its list keys in the
// field manager's order would differ (80 before 100).
func TestCreatedManagedFieldsAreTheRoundTrips(t *testing.T) {
	crd := listedCRD()
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	ports := spec.Properties["ports"]
	mapList := "map"
	ports.XListType, ports.XListMapKeys, ports.Items.Schema.Required = &mapList, []string{"port"}, []string{"port"}
	spec.Properties["ports"] = ports
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	h := listServer(t, crd, true)
	body := []byte(`{"apiVersion":"bench.example.com/v1","kind":"Thing0","metadata":{"name":"t","labels":{"app":"a"}},` +
		`"spec":{"name":"n","labels":{"b":"1","a":"2"},"ports":[{"name":"x","port":80},{"name":"y","port":100}]}}`)
	var created Object
	if err := json.Unmarshal(serve(t, h, "POST", "/apis/bench.example.com/v1/namespaces/default/thing0s?fieldManager=tester", body), &created); err != nil {
		t.Fatal(err)
	}
	if len(created.ManagedFields) != 1 || created.ManagedFields[0].FieldsV1 == nil {
		t.Fatalf("managed fields: %+v", created.ManagedFields)
	}
	raw := created.ManagedFields[0].FieldsV1.Raw
	var decoded map[string]any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"k:{\"port\":100}"`) {
		t.Fatalf("the ports are not a map list: %s", raw)
	}
	if string(raw) != string(want) {
		t.Errorf("managed fields are not their round trip's:\n got  %s\n want %s", raw, want)
	}
}
