package apiextensions

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/openapi"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	crdinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// mergingOpenAPI merges what it is given with the built-in v2 spec, as the API server's
// documents do when asked for /openapi/v2, and keeps the v3 documents.
type mergingOpenAPI struct {
	static   *spec.Swagger
	v2       *spec.Swagger
	mergeErr error // the last merge's
	v3       map[schema.GroupVersion]*spec3.OpenAPI
}

func (m *mergingOpenAPI) SetCustomResourcesV2(specs []*spec.Swagger) {
	m.v2, m.mergeErr = builder.MergeSpecs(m.static, specs...)
}

func (m *mergingOpenAPI) SetGroupVersionV3(gv schema.GroupVersion, doc *spec3.OpenAPI) {
	if doc == nil {
		delete(m.v3, gv)
		return
	}
	m.v3[gv] = doc
}

func established(i int) *apiextensionsv1.CustomResourceDefinition {
	kind := fmt.Sprintf("Thing%d", i)
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("thing%ds.bench.example.com", i)},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: fmt.Sprintf("thing%ds", i), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Description: "the spec",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer", Description: "how big"}}}}}}}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{Plural: fmt.Sprintf("thing%ds", i), Kind: kind, ListKind: kind + "List"},
			Conditions:    []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}},
		},
	}
}

// BenchmarkOpenAPIRebuild measures what one changed CustomResourceDefinition costs among
// 50 others of one group version: its documents built, the v2 spec merged with the
// built-in one, the group version's v3 documents merged.
func BenchmarkOpenAPIRebuild(b *testing.B) {
	reg, err := builtin.Registry()
	if err != nil {
		b.Fatal(err)
	}
	docs, err := openapi.Build(reg, "v1.36.3")
	if err != nil {
		b.Fatal(err)
	}
	factory := crdinformers.NewSharedInformerFactory(crdfake.NewClientset(), 0)
	crds := factory.Apiextensions().V1().CustomResourceDefinitions()
	out := &mergingOpenAPI{static: docs.V2, v3: map[schema.GroupVersion]*spec3.OpenAPI{}}
	c, err := newOpenAPIController(crds, out, nil, slog.Default())
	if err != nil {
		b.Fatal(err)
	}
	const n = 50
	for i := range n {
		if err := crds.Informer().GetIndexer().Add(established(i)); err != nil {
			b.Fatal(err)
		}
		if err := c.sync(established(i).Name); err != nil {
			b.Fatal(err)
		}
		if out.mergeErr != nil {
			b.Fatal(out.mergeErr)
		}
	}
	for i := range n {
		if _, ok := out.v2.Definitions[fmt.Sprintf("com.example.bench.v1.Thing%dList", i)]; !ok {
			b.Fatalf("Thing%dList not in the v2 spec", i)
		}
	}
	if len(out.v3) != 1 {
		b.Fatalf("v3 documents of %d group versions, want 1", len(out.v3))
	}
	changed := established(0)
	b.ResetTimer()
	for b.Loop() {
		changed.Generation++ // its spec changed
		if err := crds.Informer().GetIndexer().Update(changed); err != nil {
			b.Fatal(err)
		}
		if err := c.sync(changed.Name); err != nil {
			b.Fatal(err)
		}
		if out.mergeErr != nil {
			b.Fatal(out.mergeErr)
		}
	}
}
