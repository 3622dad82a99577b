package namespace

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// The conditions read as kube-controller-manager's namespace controller writes them.
func TestConditionWording(t *testing.T) {
	var status corev1.NamespaceStatus
	setConditions(&status, newContent().failures(nil, nil))
	ok := condition(&status, corev1.NamespaceFinalizersRemaining)
	if got := ok.Reason + " " + ok.Message; got != "ContentHasNoFinalizers All content-preserving finalizers finished" {
		t.Errorf("FinalizersRemaining without finalizers: %q", got)
	}

	left := newContent()
	left.remaining[schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}] = 2
	left.finalizers["example.com/hold"] = 2
	groupErr := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
	}}
	failures := left.failures(groupErr, nil)
	want := map[corev1.NamespaceConditionType][2]string{
		corev1.NamespaceDeletionDiscoveryFailure: {"DiscoveryFailed", "Discovery failed for some groups, 1 failing: " + groupErr.Error()},
		corev1.NamespaceContentRemaining:         {"SomeResourcesRemain", "Some resources are remaining: configmaps. has 2 resource instances"},
		corev1.NamespaceFinalizersRemaining:      {"SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances"},
	}
	for typ, rm := range want {
		if failures[typ] != rm {
			t.Errorf("%s: got %q, want %q", typ, failures[typ], rm)
		}
	}
}
