package webhook

import (
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
)

// NewServiceResolver is the resolver the admission webhooks reach their Services with, for
// the API server's other webhooks (CustomResourceDefinition conversion): one of the
// Service's ready endpoints, from the shared informers of f.
func NewServiceResolver(f informers.SharedInformerFactory) (webhookutil.ServiceResolver, error) {
	return newEndpointResolver(f)
}
