// Package nodeready says whether a Node is Ready, as Kubernetes' controllers read it (its
// nodeutil.IsNodeReady, which no library exports): its Ready condition is True.
package nodeready

import (
	corev1 "k8s.io/api/core/v1"
	nodeutil "k8s.io/component-helpers/node/util"
)

// Ready says whether n's Ready condition is True; a Node without one is not ready.
func Ready(n *corev1.Node) bool {
	_, c := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}
