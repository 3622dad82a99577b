package scheduler

import (
	"sync"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// nominator remembers pending pods nominated to a node by a preemption, so that while the
// victims leave, pods of lower priority do not take the room they free.
type nominator struct {
	mu     sync.Mutex
	byNode map[string]map[types.UID]*framework.PodInfo
	nodeOf map[types.UID]string
}

func newNominator() *nominator {
	return &nominator{byNode: map[string]map[types.UID]*framework.PodInfo{}, nodeOf: map[types.UID]string{}}
}

// set records pod's nomination ("" or a bound pod: none).
func (n *nominator) set(pod *corev1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pod.UID)
	node := pod.Status.NominatedNodeName
	if node == "" || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return
	}
	if n.byNode[node] == nil {
		n.byNode[node] = map[types.UID]*framework.PodInfo{}
	}
	n.byNode[node][pod.UID] = framework.NewPodInfo(pod)
	n.nodeOf[pod.UID] = node
}

func (n *nominator) delete(uid types.UID) {
	n.mu.Lock()
	n.deleteLocked(uid)
	n.mu.Unlock()
}

func (n *nominator) deleteLocked(uid types.UID) {
	if node, ok := n.nodeOf[uid]; ok {
		delete(n.byNode[node], uid)
		if len(n.byNode[node]) == 0 {
			delete(n.byNode, node)
		}
		delete(n.nodeOf, uid)
	}
}

// forPod lists, per node, the nominated pods that take precedence over pod (priority at
// least its own); nil when there are none.
func (n *nominator) forPod(pod *corev1.Pod) map[string][]*framework.PodInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.byNode) == 0 {
		return nil
	}
	prio := corev1helpers.PodPriority(pod)
	var out map[string][]*framework.PodInfo
	for node, pods := range n.byNode {
		for uid, pi := range pods {
			if uid != pod.UID && corev1helpers.PodPriority(pi.Pod) >= prio {
				if out == nil {
					out = map[string][]*framework.PodInfo{}
				}
				out[node] = append(out[node], pi)
			}
		}
	}
	return out
}

// withNominated is node with the nominated pods added (node itself when there are none).
func withNominated(node *framework.NodeInfo, nominated map[string][]*framework.PodInfo) *framework.NodeInfo {
	pods := nominated[node.Node().Name]
	if len(pods) == 0 {
		return node
	}
	c := node.Clone()
	for _, pi := range pods {
		c.AddPod(pi)
	}
	return c
}
