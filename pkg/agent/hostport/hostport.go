// Package hostport admits a pod to the node only if the host ports it asks for are free,
// as the kubelet's predicate admission: the scheduler's NodePorts filter run again on the
// node (a pod bound by nodeName skips the scheduler), with the scheduler's own port rules.
package hostport

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/nodeports"
)

// Reason is the kubelet's for a NodePorts predicate failure.
const Reason = nodeports.Name

// Admission refuses a pod whose host ports another admitted pod of the node holds.
type Admission struct {
	Others func() []*corev1.Pod // the node's admitted pods that may still run
}

func (a Admission) Admit(pod *corev1.Pod) (ok bool, reason, msg string) {
	wanted := framework.PodHostPorts(pod)
	if len(wanted) == 0 {
		return true, "", ""
	}
	used := framework.HostPorts{}
	for _, other := range a.Others() {
		if other.UID != pod.UID {
			for _, hp := range framework.PodHostPorts(other) {
				used[hp]++
			}
		}
	}
	for _, hp := range wanted {
		if used.Conflicts(hp) {
			return false, Reason, "Predicate " + nodeports.Name + " failed: " + nodeports.ErrReason
		}
	}
	return true, "", ""
}
