package openapi

import (
	"encoding/json"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func builtinDocs(t *testing.T) (*registry.Registry, *Documents) {
	t.Helper()
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Build(reg, "v1.32.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs.Undescribed) > 0 {
		t.Fatalf("resources without generated definitions (add their packages to hack/update-openapi.sh and run it): %v", docs.Undescribed)
	}
	return reg, docs
}

// Every served kind is a definition carrying its group-version-kind, and every resource's
// PATCH operation declares fieldValidation: kubectl decides from exactly these whether the
// server validates fields itself.
func TestDocumentsDescribeEveryResource(t *testing.T) {
	reg, docs := builtinDocs(t)
	for _, res := range reg.Resources() {
		gv := res.GroupVersion()
		doc := docs.V3[rootPath(gv)[1:]]
		if doc == nil {
			t.Fatalf("no v3 document for %s", gv)
		}
		obj, _ := res.New()
		name := obj.(interface{ OpenAPIModelName() string }).OpenAPIModelName()
		def, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("v3 %s lacks schema %s", gv, name)
		} else if !hasGVK(def.Extensions, gvkExtension(res.GVK())) {
			t.Errorf("schema %s lacks %s %v: %v", name, extensionGVK, res.GVK(), def.Extensions[extensionGVK])
		}
		if v2, ok := docs.V2.Definitions[name]; !ok || !hasGVK(v2.Extensions, gvkExtension(res.GVK())) {
			t.Errorf("v2 definition %s missing or without its kind", name)
		}

		collection := rootPath(gv) + "/" + res.Resource
		if res.Namespaced {
			collection = rootPath(gv) + "/namespaces/{namespace}/" + res.Resource
		}
		item := doc.Paths.Paths[collection+"/{name}"]
		if item == nil || item.Patch == nil || item.Get == nil {
			t.Errorf("v3 %s lacks GET/PATCH %s/{name}", gv, collection)
			continue
		}
		if !hasParam(item.Patch.Parameters, "fieldValidation") || !hasParam(item.Patch.Parameters, "fieldManager") || !hasParam(item.Patch.Parameters, "force") {
			t.Errorf("PATCH %s/{name} lacks fieldValidation/fieldManager/force", collection)
		}
		if item.Patch.Extensions["x-kubernetes-action"] != "patch" || !sameGVK(item.Patch.Extensions[extensionGVK], gvkExtension(res.GVK())) {
			t.Errorf("PATCH %s/{name} extensions: %v", collection, item.Patch.Extensions)
		}
		if list := doc.Paths.Paths[collection]; list == nil || list.Get == nil || !hasParam(list.Get.Parameters, "labelSelector") || list.Post == nil {
			t.Errorf("v3 %s lacks list/create on %s", gv, collection)
		}
		if _, ok := docs.V2.Paths.Paths[collection+"/{name}"]; !ok {
			t.Errorf("v2 lacks %s/{name}", collection)
		}
	}
	pods := docs.V3["api/v1"].Paths.Paths["/api/v1/namespaces/{namespace}/pods"]
	if pods.Get.OperationId != "listCoreV1NamespacedPod" || pods.Delete.OperationId != "deleteCoreV1CollectionNamespacedPod" {
		t.Errorf("operation ids: %s %s", pods.Get.OperationId, pods.Delete.OperationId)
	}
	if binding := docs.V3["api/v1"].Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}/binding"]; binding == nil || binding.Post == nil {
		t.Error("pods/binding is not described")
	}
}

func TestTypeConverterKnowsServedKinds(t *testing.T) {
	tc, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if _, err := tc.ObjectToTyped(pod); err != nil {
		t.Fatalf("typed pod: %v", err)
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"foo": 1}}}
	if _, err := tc.ObjectToTyped(bad); err == nil {
		t.Fatal("an unknown field should not convert")
	}
}

func hasParam(params []*spec3.Parameter, name string) bool {
	for _, p := range params {
		if p.Name == name && p.In == "query" {
			return true
		}
	}
	return false
}

func hasGVK(ext spec.Extensions, want map[string]any) bool {
	list, _ := ext[extensionGVK].([]any)
	for _, g := range list {
		if sameGVK(g, want) {
			return true
		}
	}
	return false
}

func sameGVK(got any, want map[string]any) bool {
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	return string(a) == string(b)
}
