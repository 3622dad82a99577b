// Package bootstraptoken watches the bootstrap token Secrets of kube-system, for the
// API server's bootstrap token authenticator and the tokencleaner controller alike.
package bootstraptoken

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// NewInformer is an informer of kube-system's Secrets of type bootstrap.kubernetes.io/token
// only, in a factory of its own (the shared factory would cache every Secret of the
// cluster for this), and the factory's Start.
func NewInformer(client kubernetes.Interface) (coreinformers.SecretInformer, func(stop <-chan struct{})) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()
		}))
	return factory.Core().V1().Secrets(), factory.Start
}
