package agent

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/apimachinery/lease"
)

// Node lease timing as the kubelet's: a 40 s lease renewed every quarter of it.
const (
	leaseDurationSeconds = 40
	leaseRenewInterval   = leaseDurationSeconds * time.Second / 4
)

// apiTimeout bounds a single API request made outside a caller's context.
const apiTimeout = 10 * time.Second

// runNodeLease renews the node's Lease in kube-node-lease until ctx ends,
// using the same controller as the kubelet.
func (a *Agent) runNodeLease(ctx context.Context) {
	ctl := lease.NewController(a.clock, a.client, a.cfg.NodeName, leaseDurationSeconds,
		func() { a.log.Warn("node lease renewal keeps failing", "node", a.cfg.NodeName) },
		leaseRenewInterval, a.cfg.NodeName, corev1.NamespaceNodeLease, a.setLeaseOwner)
	ctl.Run(ctx)
}

// setLeaseOwner makes the Node own its Lease, so deleting the node deletes
// the lease (the kubelet does the same).
func (a *Agent) setLeaseOwner(l *coordinationv1.Lease) error {
	if len(l.OwnerReferences) > 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s to own its lease: %w", a.cfg.NodeName, err)
	}
	l.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: corev1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
	}}
	return nil
}
