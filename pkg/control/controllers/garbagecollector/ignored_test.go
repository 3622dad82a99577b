package garbagecollector

import (
	"context"
	"io"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestEventsNotWatched: the collector leaves Events alone (core and events.k8s.io), as
// Kubernetes' collector ignores them by default: it neither holds them all in its graph nor
// deletes an Event whose owner is gone.
func TestEventsNotWatched(t *testing.T) {
	verbs := []string{"list", "watch", "delete"}
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: verbs},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: verbs},
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "events", Kind: "Event", Namespaced: true, Verbs: verbs}}},
	}}}
	resources, err := New(nil, &flakyDiscovery{DiscoveryInterface: fake}, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil))).discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(resources) != 1 || resources[0].Resource != "pods" {
		t.Errorf("watched %v; want only pods", resources)
	}
}
