package garbagecollector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// flakyDiscovery refuses the first calls, as a server that is not listening yet does.
type flakyDiscovery struct {
	discovery.DiscoveryInterface
	failures int
}

func (f *flakyDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	if f.failures > 0 {
		f.failures--
		return nil, nil, errors.New("connection refused")
	}
	return f.DiscoveryInterface.ServerGroupsAndResources()
}

func (f *flakyDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return discovery.ServerPreferredResources(f)
}

// TestDiscoverRetries: a collector whose first discoveries fail keeps trying instead of
// stopping for good (which left a cluster collecting no garbage).
func TestDiscoverRetries(t *testing.T) {
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "watch", "delete"}}},
	}}}}
	c := New(nil, &flakyDiscovery{DiscoveryInterface: fake, failures: 3}, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resources, err := c.discover(ctx)
	if err != nil {
		t.Fatalf("discover after three failures: %v", err)
	}
	if len(resources) != 1 || resources[0].Resource != "pods" {
		t.Fatalf("discovered %v; want pods", resources)
	}

	stopped, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := New(nil, &flakyDiscovery{DiscoveryInterface: fake, failures: 1 << 30}, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil))).discover(stopped); err == nil {
		t.Fatal("discover against a dead server returned no error after its context ended")
	}
}
