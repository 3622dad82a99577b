package proxy

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Trim is the informers' transform (client-go's WithTransform): it keeps of a Service or
// an EndpointSlice only what a proxy reads — what the service ports are made of, and what
// the layer-2 speaker reads — as kube-proxy's informers hold only their own small
// structures. Everything else (managed fields, uid, timestamps, the selector, cluster IP
// families, owner and target references...) would be most of the cache: at 10 000
// Services it halves the heap the cache takes again after dropping only the largest
// fields (BenchmarkInformerCache). It is idempotent: client-go may transform an object
// twice.
func Trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		// In place (client-go lets a transform change the object it is given): a trimmed
		// copy beside the decoded object would leave the heap's spans half full of the
		// dropped originals, which RSS keeps (BenchmarkInformerCache's spans figure).
		var annotations map[string]string
		if r, ok := o.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]; ok {
			annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: r}
		}
		o.ObjectMeta = leanMeta(o.ObjectMeta, nil)
		o.Annotations = annotations
		for i, p := range o.Spec.Ports {
			o.Spec.Ports[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, NodePort: p.NodePort}
		}
		o.Spec = corev1.ServiceSpec{Type: o.Spec.Type, ClusterIP: o.Spec.ClusterIP, Ports: o.Spec.Ports,
			ExternalIPs: o.Spec.ExternalIPs, SessionAffinity: o.Spec.SessionAffinity, SessionAffinityConfig: o.Spec.SessionAffinityConfig,
			LoadBalancerSourceRanges: o.Spec.LoadBalancerSourceRanges,
			ExternalTrafficPolicy:    o.Spec.ExternalTrafficPolicy, InternalTrafficPolicy: o.Spec.InternalTrafficPolicy}
		o.Status = corev1.ServiceStatus{LoadBalancer: o.Status.LoadBalancer}
		return o, nil
	case *discoveryv1.EndpointSlice:
		var labels map[string]string
		if name, ok := o.Labels[discoveryv1.LabelServiceName]; ok {
			labels = map[string]string{discoveryv1.LabelServiceName: name}
		}
		o.ObjectMeta = leanMeta(o.ObjectMeta, labels)
		for i, ep := range o.Endpoints {
			o.Endpoints[i] = discoveryv1.Endpoint{Addresses: ep.Addresses[:min(len(ep.Addresses), 1)], Conditions: ep.Conditions, NodeName: ep.NodeName, Hints: ep.Hints}
		}
		return o, nil
	}
	return obj, nil
}

// leanMeta keeps what an informer and the proxy need of the metadata: the key and the
// resource version (and the labels given).
func leanMeta(m metav1.ObjectMeta, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion, Labels: labels}
}
