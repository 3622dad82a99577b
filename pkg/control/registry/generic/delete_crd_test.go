package generic

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A CustomResourceDefinition is created without finalizers and its first deletion adds the
// cleanup finalizer in the write that marks it, as apiextensions-apiserver's REST.Delete
// does: `kubectl get crd -o yaml` right after create shows none, as on kube-apiserver.
func TestCRDCleanupFinalizerAddedOnDelete(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	crds, ok := s.reg.Lookup(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	if !ok {
		t.Fatal("no customresourcedefinitions")
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		}}
	created, err := s.Create(ctx, crds, crd, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := MustMeta(created).GetFinalizers(); len(f) != 0 {
		t.Errorf("finalizers of a new CRD: %v, want none", f)
	}
	for range 2 { // asked again, it stays held
		out, err := s.Delete(ctx, crds, "", crd.Name, metav1.DeleteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := MustMeta(out)
		if m.GetDeletionTimestamp() == nil || !slices.Equal(m.GetFinalizers(), []string{apiextensionsv1.CustomResourceCleanupFinalizer}) {
			t.Fatalf("deleted CRD: deletionTimestamp %v, finalizers %v, want marked and held by the cleanup finalizer", m.GetDeletionTimestamp(), m.GetFinalizers())
		}
	}
	if _, err := s.Get(ctx, crds, "", crd.Name); err != nil {
		t.Fatalf("a CRD held by its finalizer is gone: %v", err)
	}
}
