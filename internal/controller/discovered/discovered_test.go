package discovered

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSupporting(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Verbs: []string{"list", "watch", "delete"}},
			{Name: "pods/status", Verbs: []string{"get", "list", "delete"}},
			{Name: "bindings", Verbs: []string{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Verbs: []string{"list", "delete"}}}},
	}
	got := Supporting(lists, "list", "delete")
	want := []schema.GroupVersionResource{{Version: "v1", Resource: "pods"}, {Group: "apps", Version: "v1", Resource: "deployments"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("list+delete: got %v, want %v", got, want)
	}
	if got := Supporting(lists, "list", "watch", "delete"); len(got) != 1 || got[0].Resource != "pods" {
		t.Errorf("list+watch+delete: got %v", got)
	}
}
