package apiextensions

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A CustomResourceDefinition warns of an unrecognized format when a write introduces it,
// not at each later update (upstream's WarningsOnUpdate ratchets them).
func TestCRDFormatWarningsRatchet(t *testing.T) {
	schema := func(formats ...string) *apiextensionsv1.CustomResourceDefinition {
		props := map[string]apiextensionsv1.JSONSchemaProps{}
		for _, f := range formats {
			props[f] = apiextensionsv1.JSONSchemaProps{Type: "string", Format: f}
		}
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "boxes.example.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "boxes", Kind: "Box"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", Properties: props}}}}}}
	}
	rules := CustomResourceDefinitionRules
	if got, want := rules.Warnings(schema("odd"), nil), []string{`unrecognized format "odd"`}; !slices.Equal(got, want) {
		t.Errorf("create: %q, want %q", got, want)
	}
	if got := rules.Warnings(schema("odd"), schema("odd")); len(got) != 0 {
		t.Errorf("an update keeping the format warned of %q", got)
	}
	if got, want := rules.Warnings(schema("odd", "queer"), schema("odd")), []string{`unrecognized format "queer"`}; !slices.Equal(got, want) {
		t.Errorf("an update adding a format: %q, want %q", got, want)
	}
}
