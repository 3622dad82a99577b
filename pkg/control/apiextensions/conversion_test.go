package apiextensions

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
)

// With the None conversion strategy, a custom resource converted to another version is
// pruned with that version's schema, as apiextensions-apiserver's schemaCoercingConverter
// prunes what its converter returns: one written at v2 is stored without what v1 (the
// storage version) does not declare, one stored at v1 is served at v2 without what v2 does
// not declare. Before, both kept every field.
func TestNoneConversionPrunesWithTheTargetSchema(t *testing.T) {
	object := func(props ...string) apiextensionsv1.JSONSchemaProps {
		s := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for _, p := range props {
			s.Properties[p] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		return s
	}
	version := func(name string, storage bool, spec ...string) apiextensionsv1.CustomResourceDefinitionVersion {
		root := object()
		root.Properties["spec"] = object(spec...)
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &root}}
	}
	names := apiextensionsv1.CustomResourceDefinitionNames{Plural: "knobs", Singular: "knob", Kind: "Knob", ListKind: "KnobList"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "knobs.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: names, Scope: apiextensionsv1.NamespaceScoped,
			Versions:   []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true, "a", "b"), version("v2", false, "a", "c")},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: names},
	}
	resources, err := Resources(crd, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v2 *registry.Resource
	for _, res := range resources {
		if res.Version == "v2" {
			v2 = res
		}
	}
	if v2 == nil || v2.Conversion == nil {
		t.Fatalf("v2 is not served converted to v1: %+v", resources)
	}

	written := &Object{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v2", Kind: "Knob"}, ObjectMeta: metav1.ObjectMeta{Name: "k"},
		Spec: map[string]any{"a": "x", "c": "z"}}
	stored, err := v2.Conversion.ToStorage(written)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"a": "x"}; !equality.Semantic.DeepEqual(stored.(*Object).Spec, want) {
		t.Errorf("written at v2, stored as:\n%s", diff.Diff(want, stored.(*Object).Spec))
	}
	if written.Spec.(map[string]any)["c"] != "z" {
		t.Errorf("storing changed the object written: %v", written.Spec)
	}

	served, err := generic.Decode(v2, []byte(`{"apiVersion":"example.com/v1","kind":"Knob","metadata":{"name":"k"},"spec":{"a":"x","b":"y"}}`), 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := served.(*Object), (map[string]any{"a": "x"}); got.APIVersion != "example.com/v2" || !equality.Semantic.DeepEqual(got.Spec, want) {
		t.Errorf("stored at v1, served at v2 as %s:\n%s", got.APIVersion, diff.Diff(want, got.Spec))
	}
}
