package policy

import (
	"log/slog"

	"k8s.io/client-go/informers"
	anpinformers "sigs.k8s.io/network-policy-api/pkg/client/informers/externalversions"
)

// New is the controller on client-go's informer factory, as cmd/minilet wires it: the
// tests' shorthand (the package itself names no factory, see Informers).
func New(factory informers.SharedInformerFactory, node string, log *slog.Logger) *Controller {
	return NewController(factory, Informers{
		Pods:            factory.Core().V1().Pods(),
		Namespaces:      factory.Core().V1().Namespaces(),
		NetworkPolicies: factory.Networking().V1().NetworkPolicies(),
		ServiceCIDRs:    factory.Networking().V1().ServiceCIDRs(),
		Services:        factory.Core().V1().Services(),
	}, node, log)
}

// WithAdminPolicies is WithAdmin on the admin policies' informer factory, with the Nodes of
// core, a factory the controller already starts.
func (c *Controller) WithAdminPolicies(f anpinformers.SharedInformerFactory, core informers.SharedInformerFactory) *Controller {
	admin := f.Policy().V1alpha1()
	return c.WithAdmin(f, AdminInformers{
		AdminNetworkPolicies:         admin.AdminNetworkPolicies(),
		BaselineAdminNetworkPolicies: admin.BaselineAdminNetworkPolicies(),
		Nodes:                        core.Core().V1().Nodes(),
	})
}
