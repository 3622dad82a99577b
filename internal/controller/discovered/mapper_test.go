package discovered

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestMapperReadsDiscoveryAgainOnMiss: a kind served since the mapper's cache was filled is
// found without a reset; a kind still not served is not.
func TestMapperReadsDiscoveryAgainOnMiss(t *testing.T) {
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}},
	}}}}
	m := Mapper(fake)
	if _, err := m.RESTMapping(schema.GroupKind{Kind: "Pod"}, "v1"); err != nil {
		t.Fatalf("pods: %v", err)
	}
	fake.Resources = append(fake.Resources, &metav1.APIResourceList{
		GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true}},
	})
	mapping, err := m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "v1")
	if err != nil || mapping.Resource.Resource != "widgets" {
		t.Fatalf("a kind served since the cache was filled: %v, %v", mapping, err)
	}
	if gvr, err := m.ResourceFor(schema.GroupVersionResource{Group: "example.com", Resource: "widgets"}); err != nil || gvr.Version != "v1" {
		t.Errorf("ResourceFor widgets: %v, %v", gvr, err)
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "nowhere.example.com", Kind: "Thing"}, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("a kind not served: %v, want a no-match error", err)
	}
}
