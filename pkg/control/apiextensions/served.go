package apiextensions

import (
	"sync"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RegistryServed serves custom resources by adding their resources to the API server's
// registry (and taking them out again), which the REST layer, discovery and the generic
// store read at every request.
type RegistryServed struct {
	reg        *registry.Registry
	converters *conversion.CRConverterFactory
	mu         sync.Mutex
	// served are the resources of each CustomResourceDefinition and the resourceVersion
	// they were built from.
	served map[string]servedCRD
}

type servedCRD struct {
	resourceVersion string
	gvrs            []schema.GroupVersionResource
	// gone is the resources' Gone: kept across rebuilds, closed by Unserve.
	gone chan struct{}
}

// NewRegistryServed serves custom resources in reg; converters call the conversion
// webhooks of CustomResourceDefinitions with the Webhook conversion strategy.
func NewRegistryServed(reg *registry.Registry, converters *conversion.CRConverterFactory) *RegistryServed {
	return &RegistryServed{reg: reg, converters: converters, served: map[string]servedCRD{}}
}

// Serve (re)builds the resources of crd.
func (s *RegistryServed) Serve(crd *apiextensionsv1.CustomResourceDefinition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.served[crd.Name]; ok && cur.resourceVersion == crd.ResourceVersion {
		return nil
	}
	resources, err := Resources(crd, s.converters)
	if err != nil {
		return err
	}
	prev := s.served[crd.Name]
	gone := prev.gone
	if gone == nil {
		gone = make(chan struct{})
	}
	s.reg.Remove(prev.gvrs...)
	delete(s.served, crd.Name)
	gvrs := make([]schema.GroupVersionResource, len(resources))
	for i, r := range resources {
		r.Gone = gone
		gvrs[i] = r.GroupVersionResource
	}
	if err := s.reg.Add(resources...); err != nil {
		stop(gone)
		return err
	}
	s.served[crd.Name] = servedCRD{resourceVersion: crd.ResourceVersion, gvrs: gvrs, gone: gone}
	return nil
}

// Unserve stops serving the resources of the CustomResourceDefinition named.
func (s *RegistryServed) Unserve(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reg.Remove(s.served[name].gvrs...)
	stop(s.served[name].gone)
	delete(s.served, name)
}

// stop ends the watches of resources no longer served.
func stop(gone chan struct{}) {
	if gone != nil {
		close(gone)
	}
}
