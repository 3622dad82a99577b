package controlplane

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// knobsCRD declares a top-level field a and spec.b, spec.gone, with no defaults yet.
func knobsCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "knobs.defaulting.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "defaulting.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "knobs", Singular: "knob", Kind: "Knob", ListKind: "KnobList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"a":    str,
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"b": str, "gone": str}},
					}}}}},
		},
	}
}

// schemalessCRD is a CustomResourceDefinition of kind (plural plural) in group, served and
// stored at v1, whose schema keeps every field.
func schemalessCRD(group, plural, kind string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}},
	}
}

// knobFields are a knob's a, spec.b and spec.gone, "-" for each it lacks.
func knobFields(u *unstructured.Unstructured) [3]string {
	out := [3]string{"-", "-", "-"}
	for i, path := range [][]string{{"a"}, {"spec", "b"}, {"spec", "gone"}} {
		if v, found, _ := unstructured.NestedString(u.Object, path...); found {
			out[i] = v
		}
	}
	return out
}

// A default added to a CustomResourceDefinition's schema shows on the custom resources
// stored before it whenever they are read (GET, LIST, WATCH), and is stored at their next
// write; a field the schema no longer declares is pruned from what is read, as
// kube-apiserver's storage decoder of custom resources prunes and defaults.
func TestCustomResourceDefaultingFromStorage(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	admin := c.adminConfig(t)
	crds := crdclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, knobsCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitEstablished(t, "crd/knobs.defaulting.example.com")
	knobs := customResources(admin, "defaulting.example.com", "v1", "knobs")
	// await polls f until it holds; a changed schema is served within a moment.
	await := func(what string, f func() (bool, error)) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			ok, err := f()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 15s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var before *unstructured.UnstructuredList
	await("knobs served", func() (bool, error) {
		var err error
		before, err = knobs.List(ctx, metav1.ListOptions{})
		return err == nil, err
	})
	for name, spec := range map[string]map[string]any{"k1": {"gone": "x"}, "k2": {}} {
		if _, err := knobs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "defaulting.example.com/v1", "kind": "Knob",
			"metadata": map[string]any{"name": name}, "spec": spec}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Defaults added: every read shows them.
	if _, err := crds.Patch(ctx, "knobs.defaulting.example.com", types.JSONPatchType, []byte(`[
		{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/a/default","value":"A"},
		{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/b/default","value":"B"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	await("k1 defaulted on GET", func() (bool, error) {
		k1, err := knobs.Get(ctx, "k1", metav1.GetOptions{})
		return err == nil && knobFields(k1) == [3]string{"A", "B", "x"}, err
	})
	list, err := knobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]string{"k1": {"A", "B", "x"}, "k2": {"A", "B", "-"}}
	for i := range list.Items {
		if got := knobFields(&list.Items[i]); got != want[list.Items[i].GetName()] {
			t.Errorf("LIST: %s has a, spec.b, spec.gone %v, want %v", list.Items[i].GetName(), got, want[list.Items[i].GetName()])
		}
	}
	// A watch from before they were created replays them, defaulted.
	w, err := knobs.Watch(ctx, metav1.ListOptions{ResourceVersion: before.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case ev := <-w.ResultChan():
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				t.Fatalf("watch event %s: %v", ev.Type, ev.Object)
			}
			if got := knobFields(u); ev.Type != "ADDED" || got != want[u.GetName()] {
				t.Errorf("WATCH: %s %s has a, spec.b, spec.gone %v, want %v", ev.Type, u.GetName(), got, want[u.GetName()])
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the watch replayed no creation")
		}
	}
	w.Stop()

	// A write of k1 stores them; its spec is as it was read, so its generation stays.
	k1, err := knobs.Patch(ctx, "k1", types.MergePatchType, []byte(`{"metadata":{"labels":{"written":"yes"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := knobFields(k1); got != want["k1"] || k1.GetGeneration() != 1 {
		t.Errorf("k1 written: a, spec.b, spec.gone %v, generation %d; want %v, 1", got, k1.GetGeneration(), want["k1"])
	}

	// Defaults and spec.gone taken out of the schema: k2, never written since, loses the
	// defaults; k1 keeps what it stored, but for spec.gone, pruned from what is read.
	if _, err := crds.Patch(ctx, "knobs.defaulting.example.com", types.JSONPatchType, []byte(`[
		{"op":"remove","path":"/spec/versions/0/schema/openAPIV3Schema/properties/a/default"},
		{"op":"remove","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/b/default"},
		{"op":"remove","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/gone"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	await("k2 without defaults", func() (bool, error) {
		k2, err := knobs.Get(ctx, "k2", metav1.GetOptions{})
		return err == nil && knobFields(k2) == [3]string{"-", "-", "-"}, err
	})
	if k1, err := knobs.Get(ctx, "k1", metav1.GetOptions{}); err != nil || knobFields(k1) != [3]string{"A", "B", "-"} {
		t.Errorf("k1 after the schema lost its defaults and spec.gone: %v, %v; want [A B -]", err, k1)
	}

	if err := crds.Delete(ctx, "knobs.defaulting.example.com", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
