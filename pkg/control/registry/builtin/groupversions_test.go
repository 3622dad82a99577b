package builtin

import (
	"fmt"
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The versions of a group are listed in kube's priority order (GA, then beta, then alpha,
// newest first), whatever order they were registered in: discovery's first version is the
// group's preferred one, which kubectl reads and writes at. A CustomResourceDefinition
// listing v1alpha1 (deprecated) before v1 made kubectl use v1alpha1 and print its
// deprecation warning at every `kubectl get`.
func TestGroupVersionsInPriorityOrder(t *testing.T) {
	custom := func(version, resource string) *registry.Resource {
		return &registry.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: version, Resource: resource},
			Kind: "Gizmo", NewObject: func() runtime.Object { return &unstructured.Unstructured{} }}
	}
	reg, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	// The built-in groups are registered in kube's order already: listed as registered.
	var registered []schema.GroupVersion
	for _, r := range reg.Resources() {
		if !slices.Contains(registered, r.GroupVersion()) {
			registered = append(registered, r.GroupVersion())
		}
	}
	if got := reg.GroupVersions(); fmt.Sprint(got) != fmt.Sprint(registered) {
		t.Errorf("built-in group versions:\n%v\nregistered as\n%v", got, registered)
	}
	if err := reg.Add(custom("v1alpha1", "gizmos"), custom("v2beta1", "gizmos"), custom("v1", "gizmos"), custom("v1beta1", "gadgets")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, gv := range reg.GroupVersions() {
		if gv.Group == "example.com" {
			got = append(got, gv.Version)
		}
	}
	if fmt.Sprint(got) != "[v1 v2beta1 v1beta1 v1alpha1]" {
		t.Errorf("example.com versions: %v", got)
	}
}
