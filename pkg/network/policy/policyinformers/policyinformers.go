// Package policyinformers runs package policy's controller on client-go's informer
// factories. Apart from package policy, whose verdicts miniproxy's explain links: importing
// package informers links a typed client and an informer of every API group and registers
// all their kinds at start.
package policyinformers

import (
	"log/slog"

	"github.com/minik8s/minik8s/pkg/network/policy"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	anpclient "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned"
	anpinformers "sigs.k8s.io/network-policy-api/pkg/client/informers/externalversions"
)

// NewController is the controller of node's pods reading client's pods, namespaces and
// NetworkPolicies and admin's AdminNetworkPolicies and BaselineAdminNetworkPolicy, with
// client's Nodes for their node peers; it writes what admin's policies ask and it lacks in
// their status.
func NewController(client kubernetes.Interface, admin anpclient.Interface, node string, log *slog.Logger) *policy.Controller {
	f := informers.NewSharedInformerFactory(client, 0)
	a := anpinformers.NewSharedInformerFactory(admin, 0)
	return policy.NewController(f, policy.Informers{
		Pods:            f.Core().V1().Pods(),
		Namespaces:      f.Core().V1().Namespaces(),
		NetworkPolicies: f.Networking().V1().NetworkPolicies(),
		ServiceCIDRs:    f.Networking().V1().ServiceCIDRs(),
		Services:        f.Core().V1().Services(),
	}, node, log).WithAdmin(a, policy.AdminInformers{
		AdminNetworkPolicies:         a.Policy().V1alpha1().AdminNetworkPolicies(),
		BaselineAdminNetworkPolicies: a.Policy().V1alpha1().BaselineAdminNetworkPolicies(),
		Nodes:                        f.Core().V1().Nodes(),
		Status:                       admin.PolicyV1alpha1().AdminNetworkPolicies(),
	})
}
