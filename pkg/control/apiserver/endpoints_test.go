package apiserver

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// A renewal that changes nothing writes neither the Endpoints nor the EndpointSlice.
func TestEndpointRenewalWritesNothingUnchanged(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, storetest.Bolt(t), "10.100.0.0/16", "10.200.0.2", 6443)
	if err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	ep := read[*corev1.Endpoints](t, s, corev1.SchemeGroupVersion.WithResource("endpoints"), "default", "kubernetes")
	slice := read[*discoveryv1.EndpointSlice](t, s, discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), "default", "kubernetes")
	for range 2 {
		if err := s.reconcileEndpoints(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if after := read[*corev1.Endpoints](t, s, corev1.SchemeGroupVersion.WithResource("endpoints"), "default", "kubernetes"); after.ResourceVersion != ep.ResourceVersion {
		t.Errorf("Endpoints rewritten: %s → %s", ep.ResourceVersion, after.ResourceVersion)
	}
	if after := read[*discoveryv1.EndpointSlice](t, s, discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), "default", "kubernetes"); after.ResourceVersion != slice.ResourceVersion {
		t.Errorf("EndpointSlice rewritten: %s → %s", slice.ResourceVersion, after.ResourceVersion)
	}
}
