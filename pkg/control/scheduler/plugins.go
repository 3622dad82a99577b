package scheduler

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// nodeInfo is a node with what is already placed on it.
type nodeInfo struct {
	node      *corev1.Node
	pods      int
	requested corev1.ResourceList
}

// filter says why a pod cannot go on a node, or "" when it can (the predicates of the seeds).
type filter func(pod *corev1.Pod, n *nodeInfo) string

var filters = []filter{nodeReady, nodeSchedulable, nodeSelectorMatches, taintsTolerated, podCountFits, resourcesFit}

func nodeReady(_ *corev1.Pod, n *nodeInfo) string {
	for _, c := range n.node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return ""
		}
	}
	return "node(s) were not ready"
}

// nodeSchedulable is kube-scheduler's NodeUnschedulable filter: a cordoned node takes only
// pods that tolerate the unschedulable taint (DaemonSet pods do).
func nodeSchedulable(pod *corev1.Pod, n *nodeInfo) string {
	if n.node.Spec.Unschedulable && !tolerates(pod.Spec.Tolerations, &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		return "node(s) were unschedulable"
	}
	return ""
}

// nodeSelectorMatches is kube-scheduler's NodeAffinity filter: the pod's nodeSelector and
// its required node affinity (label expressions and matchFields, which DaemonSet pods use
// to name their node), through component-helpers as kube-scheduler evaluates them.
func nodeSelectorMatches(pod *corev1.Pod, n *nodeInfo) string {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n.node); err != nil || !ok {
		return "node(s) didn't match Pod's node affinity/selector"
	}
	return ""
}

func taintsTolerated(pod *corev1.Pod, n *nodeInfo) string {
	for i := range n.node.Spec.Taints {
		t := &n.node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(pod.Spec.Tolerations, t) {
			return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
		}
	}
	return ""
}

func tolerates(tols []corev1.Toleration, t *corev1.Taint) bool {
	for i := range tols {
		if tols[i].ToleratesTaint(klog.Background(), t, false) {
			return true
		}
	}
	return false
}

func podCountFits(_ *corev1.Pod, n *nodeInfo) string {
	if max, ok := n.node.Status.Allocatable[corev1.ResourcePods]; ok && int64(n.pods) >= max.Value() {
		return "Too many pods"
	}
	return ""
}

func resourcesFit(pod *corev1.Pod, n *nodeInfo) string {
	for name, want := range podRequests(pod) {
		alloc, ok := n.node.Status.Allocatable[name]
		if !ok {
			continue
		}
		used := n.requested[name]
		free := alloc.DeepCopy()
		free.Sub(used)
		if free.Cmp(want) < 0 {
			return "Insufficient " + string(name)
		}
	}
	return ""
}

// podRequests sums the containers' requests (init containers run one at a time, so the
// largest of them counts if it is bigger), as the scheduler's resource fit does.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
				total[name] = q.DeepCopy()
			}
		}
	}
	return total
}

// score prefers the least loaded node: the mean free fraction of CPU, memory and pod slots
// (the seeds' LeastRequestedPriority, with pods as a third dimension so empty pods spread).
func score(n *nodeInfo) float64 {
	var sum float64
	var dims int
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		alloc, ok := n.node.Status.Allocatable[name]
		if !ok || alloc.IsZero() {
			continue
		}
		used := n.requested[name]
		sum += 1 - fraction(used, alloc)
		dims++
	}
	if max, ok := n.node.Status.Allocatable[corev1.ResourcePods]; ok && max.Value() > 0 {
		sum += 1 - float64(n.pods)/float64(max.Value())
		dims++
	}
	if dims == 0 {
		return 0
	}
	return sum / float64(dims)
}

func fraction(used, total resource.Quantity) float64 {
	return float64(used.MilliValue()) / float64(total.MilliValue())
}
