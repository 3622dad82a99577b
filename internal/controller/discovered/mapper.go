package discovered

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// Mapper maps kinds and resources to each other from discovery, cached; a kind or resource
// the cache does not know has discovery read again once before it is said not to exist, so
// a CRD created a moment ago is found (kube-controller-manager's mapper waits for its 30 s
// reset). Reset forgets the cache.
func Mapper(client discovery.DiscoveryInterface) meta.ResettableRESTMapper {
	return freshOnMiss{restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client))}
}

type freshOnMiss struct {
	*restmapper.DeferredDiscoveryRESTMapper
}

// again is f's answer, or, when it knows no such kind or resource, its answer after a reset.
func again[T any](m freshOnMiss, f func() (T, error)) (T, error) {
	v, err := f()
	if meta.IsNoMatchError(err) {
		m.Reset()
		v, err = f()
	}
	return v, err
}

func (m freshOnMiss) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return again(m, func() (schema.GroupVersionKind, error) { return m.DeferredDiscoveryRESTMapper.KindFor(r) })
}

func (m freshOnMiss) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return again(m, func() ([]schema.GroupVersionKind, error) { return m.DeferredDiscoveryRESTMapper.KindsFor(r) })
}

func (m freshOnMiss) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return again(m, func() (schema.GroupVersionResource, error) { return m.DeferredDiscoveryRESTMapper.ResourceFor(r) })
}

func (m freshOnMiss) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return again(m, func() ([]schema.GroupVersionResource, error) { return m.DeferredDiscoveryRESTMapper.ResourcesFor(r) })
}

func (m freshOnMiss) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return again(m, func() (*meta.RESTMapping, error) { return m.DeferredDiscoveryRESTMapper.RESTMapping(gk, versions...) })
}

func (m freshOnMiss) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return again(m, func() ([]*meta.RESTMapping, error) {
		return m.DeferredDiscoveryRESTMapper.RESTMappings(gk, versions...)
	})
}
