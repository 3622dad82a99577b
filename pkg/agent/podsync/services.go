package podsync

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Services are the Services whose variables containers get (serviceEnv), as the
// kubelet's serviceLister and serviceHasSynced: the agent's Service informer
// (NewServiceInformer). A nil Lister is a node without the API: no Services, nothing to wait for.
type Services struct {
	Lister    corelisters.ServiceLister
	HasSynced cache.InformerSynced
}

// NewServiceInformer is the kubelet's informer on the Services of every namespace, which
// containers' variables are made from: headless Services are left out by the field
// selector (kubernetes/kubernetes#122394), and each Service is kept trimmed to what the
// variables read (trimService). Its informer is made; the caller starts the factory.
func NewServiceInformer(client kubernetes.Interface) (informers.SharedInformerFactory, Services) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.clusterIP", corev1.ClusterIPNone).String()
		}),
		informers.WithTransform(trimService))
	services := factory.Core().V1().Services()
	return factory, Services{Lister: services.Lister(), HasSynced: services.Informer().HasSynced}
}

// trimService keeps of a Service only what its variables (serviceLinkEnv) and the
// informer's cache need, so the node holds little for each Service of the cluster.
func trimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok { // a deletion's tombstone: its object was trimmed when it was added
		return obj, nil
	}
	ports := make([]corev1.ServicePort, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		ports[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID, ResourceVersion: svc.ResourceVersion},
		Spec:       corev1.ServiceSpec{ClusterIP: svc.Spec.ClusterIP, Ports: ports},
	}, nil
}
