package proxy

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Trim drops what a proxy never reads from Services and EndpointSlices before the
// informers cache them (client-go's transform): managed fields, which are often the largest
// part of an object, annotations but the source-ranges one, and the endpoints' target
// references, zones and hints. At 10 000 Services this is most of the proxy's memory.
func Trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		o.ManagedFields = nil
		ranges, ok := o.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]
		o.Annotations = nil
		if ok {
			o.Annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: ranges}
		}
	case *discoveryv1.EndpointSlice:
		o.ManagedFields = nil
		o.Annotations = nil
		o.OwnerReferences = nil
		for i := range o.Endpoints {
			ep := &o.Endpoints[i]
			ep.TargetRef, ep.Zone, ep.Hints, ep.DeprecatedTopology, ep.Hostname = nil, nil, nil, nil, nil
		}
	}
	return obj, nil
}
