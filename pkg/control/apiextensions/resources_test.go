package apiextensions

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// A deprecated version's warning is upstream's: its own text, else the newest served,
// newer version that is not deprecated (in kube-aware order, where v1 ranks above v2beta1),
// else none.
func TestDeprecationWarning(t *testing.T) {
	v := func(name string, served, deprecated bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Deprecated: deprecated}
	}
	spec := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) apiextensionsv1.CustomResourceDefinitionSpec {
		return apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gauge"}, Versions: versions}
	}
	own := v("v1beta1", true, true)
	own.DeprecationWarning = ptr.To("goes in 2027")
	for _, tc := range []struct {
		spec apiextensionsv1.CustomResourceDefinitionSpec
		of   apiextensionsv1.CustomResourceDefinitionVersion
		want string
	}{
		{spec(v("v1alpha1", true, true), v("v1", true, false), v("v2beta1", true, false), v("v3", false, false)), v("v1alpha1", true, true),
			"example.com/v1alpha1 Gauge is deprecated; use example.com/v1 Gauge"},
		{spec(v("v1beta1", true, true), v("v1beta2", true, false), v("v1", true, false), v("v2", true, false)), v("v1beta1", true, true),
			"example.com/v1beta1 Gauge is deprecated; use example.com/v2 Gauge"},
		{spec(v("v1", true, true), v("v1beta1", true, false), v("v2alpha1", true, false)), v("v1", true, true),
			"example.com/v1 Gauge is deprecated"},
		{spec(v("v1alpha1", true, true), v("v1alpha2", true, true)), v("v1alpha1", true, true),
			"example.com/v1alpha1 Gauge is deprecated"},
		{spec(own, v("v1", true, false)), own, "goes in 2027"},
	} {
		if got := deprecationWarning(tc.spec, tc.of); got != tc.want {
			t.Errorf("%s of %+v: %q, want %q", tc.of.Name, tc.spec.Versions, got, tc.want)
		}
	}
}

// The fields a custom resource names that nothing declares are upstream's unknown fields
// (what fieldValidation Strict refuses and Warn warns of), in its order: those of the
// metadata, those pruning drops, those of an embedded resource's metadata. Before, the
// metadata's were not reported (dropped as the body was decoded).
func TestUnknownFieldsOfTheMetadata(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: boxes.example.com}
spec:
  group: example.com
  names: {plural: boxes, singular: box, kind: Box, listKind: BoxList}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
status:
  acceptedNames: {plural: boxes, singular: box, kind: Box, listKind: BoxList}
`), crd); err != nil {
		t.Fatal(err)
	}
	resources, err := Resources(crd, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj := &Object{}
	body := `{"apiVersion":"example.com/v1","kind":"Box","metadata":{"name":"b","junk":1,"labels":{"a":"b"}},` +
		`"spec":{"other":1,"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","junk":2},"spec":{}}}}`
	if _, err := kjson.UnmarshalStrict([]byte(body), obj); err != nil {
		t.Fatal(err)
	}
	want := []string{`unknown field "metadata.junk"`, `unknown field "spec.other"`, `unknown field "spec.template.metadata.junk"`}
	if got, err := resources[0].Rules.UnknownFields(obj); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("unknown fields %q (%v), want %q", got, err, want)
	}

	// Upstream warns of a finalizer that is not domain-qualified when it is added, not at
	// each later update of the object.
	withFinalizer := obj.DeepCopyObject().(*Object)
	withFinalizer.SetFinalizers([]string{"boxes"})
	if got := resources[0].Rules.Warnings(withFinalizer, nil); len(got) != 1 {
		t.Errorf("a create with the finalizer warned of %q, want one warning", got)
	}
	if got := resources[0].Rules.Warnings(withFinalizer, obj); len(got) != 1 {
		t.Errorf("an update adding the finalizer warned of %q, want one warning", got)
	}
	if got := resources[0].Rules.Warnings(withFinalizer, withFinalizer.DeepCopyObject()); len(got) != 0 {
		t.Errorf("an update keeping the finalizer warned of %q", got)
	}

	// An embedded resource whose apiVersion, kind or metadata does not decode cannot be
	// handled: upstream's decoder fails on it, whatever the field validation.
	obj.Spec = map[string]any{"template": map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": int64(5)}}}
	wantErr := `spec.template.metadata: Invalid value: {"name":5}: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string`
	if _, err := resources[0].Rules.UnknownFields(obj); !apierrors.IsBadRequest(err) || err.Error() != wantErr {
		t.Errorf("embedded metadata of the wrong type: %v, want %s", err, wantErr)
	}
}
