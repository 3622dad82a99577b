// Package nodematch admits a pod to the node only if the node is one the pod may run on,
// as the kubelet's predicate admission runs the scheduler's NodeAffinity filter and its
// NoExecute taint check again on the node: a pod bound by nodeName skips the scheduler.
package nodematch

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/minik8s/minik8s/pkg/agent/staticpod"
	schedaffinity "github.com/minik8s/minik8s/pkg/control/scheduler/plugins/nodeaffinity"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/tainttoleration"
)

// Taint reason as the kubelet's predicate admission words it (the scheduler's
// ErrReasonNotMatch, not the filter's message naming the taint).
const errReasonTaints = "node(s) had taints that the pod didn't tolerate"

// NodeSource gives the node as last seen (fresh false) or as the API has it now (fresh
// true); nil when it is not known.
type NodeSource func(fresh bool) *corev1.Node

// Affinity refuses a pod whose nodeSelector or required node affinity the node does not
// match: reason NodeAffinity, "Predicate NodeAffinity failed: node(s) didn't match Pod's
// node affinity/selector". A node seen before that does not match is read again first,
// as the kubelet fetches it anew when node affinity alone fails (its labels may just
// have changed).
type Affinity struct{ Node NodeSource }

func (a Affinity) Admit(pod *corev1.Pod) (ok bool, reason, msg string) {
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	matches := func(node *corev1.Node) bool {
		match, err := required.Match(node)
		return node == nil || err == nil && match
	}
	if matches(a.Node(false)) || matches(a.Node(true)) {
		return true, "", ""
	}
	return false, schedaffinity.Name, "Predicate " + schedaffinity.Name + " failed: " + schedaffinity.ErrReasonPod
}

// Taints refuses a pod that does not tolerate one of the node's NoExecute taints (static
// pods excepted): reason TaintToleration, "Predicate TaintToleration failed: node(s) had
// taints that the pod didn't tolerate".
type Taints struct{ Node NodeSource }

func (t Taints) Admit(pod *corev1.Pod) (ok bool, reason, msg string) {
	node := t.Node(false)
	if node == nil || staticpod.IsStatic(pod) {
		return true, "", ""
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if untolerated {
		return false, tainttoleration.Name, "Predicate " + tainttoleration.Name + " failed: " + errReasonTaints
	}
	return true, "", ""
}
