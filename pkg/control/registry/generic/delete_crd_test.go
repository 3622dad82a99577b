package generic

import (
	"slices"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
	// The first deletion only marks it, whatever the propagation policy: no grace period, no
	// garbage collector finalizer, the same generation. Asked again, it is deleted as any
	// object held by a finalizer: grace 0 and the collector's finalizer as asked.
	foreground := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}
	for i, want := range [][]string{
		{apiextensionsv1.CustomResourceCleanupFinalizer},
		{apiextensionsv1.CustomResourceCleanupFinalizer, metav1.FinalizerDeleteDependents},
	} {
		out, _, err := s.Delete(ctx, crds, "", crd.Name, foreground)
		if err != nil {
			t.Fatal(err)
		}
		m := MustMeta(out)
		if m.GetDeletionTimestamp() == nil || !slices.Equal(m.GetFinalizers(), want) || m.GetGeneration() != 1 {
			t.Fatalf("deletion %d: deletionTimestamp %v, finalizers %v, generation %d; want marked, held by %v, generation 1", i+1, m.GetDeletionTimestamp(), m.GetFinalizers(), m.GetGeneration(), want)
		}
		if grace := m.GetDeletionGracePeriodSeconds(); (i == 0) != (grace == nil) {
			t.Errorf("deletion %d: deletionGracePeriodSeconds %v, want none on the first and 0 after", i+1, grace)
		}
		// The marking write sets the Terminating condition too, as kube's Delete does.
		terminating := apihelpers.FindCRDCondition(out.(*apiextensionsv1.CustomResourceDefinition), apiextensionsv1.Terminating)
		if terminating == nil || terminating.Status != apiextensionsv1.ConditionTrue || terminating.Reason != "InstanceDeletionPending" {
			t.Errorf("deletion %d: Terminating condition %+v, want True for InstanceDeletionPending", i+1, terminating)
		}
	}
	if _, err := s.Get(ctx, crds, "", crd.Name); err != nil {
		t.Fatalf("a CRD held by its finalizer is gone: %v", err)
	}
}
