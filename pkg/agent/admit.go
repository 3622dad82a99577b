package agent

import (
	"context"
	goruntime "runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/podsync"
)

// admitter decides whether the node takes a pod new to it, as the kubelet's pod admit
// handlers do.
type admitter interface {
	Admit(pod *corev1.Pod) (ok bool, reason, message string)
}

// admittingWorkers are the pod workers as the pod sources see them: a pod new to the node
// passes the admitters first.
type admittingWorkers struct{ a *Agent }

func (w admittingWorkers) Update(pod *corev1.Pod) { w.a.updatePod(pod) }
func (w admittingWorkers) Remove(uid types.UID)   { w.a.workers.Remove(uid) }

// Reconcile stores a known pod's newest version; a pod new to the node goes through Update.
func (w admittingWorkers) Reconcile(pod *corev1.Pod) bool { return w.a.workers.Reconcile(pod) }

// updatePod hands pod to its worker, after the admitters for a pod new to the node.
func (a *Agent) updatePod(pod *corev1.Pod) {
	if !a.workers.Known(pod.UID) {
		a.admit(pod)
	}
	a.workers.Update(pod)
}

// admit runs the admitters on a pod that has not started here; the first that refuses
// it has its worker fail it without starting anything, as the kubelet's rejectPod:
// Failed, with the admitter's reason, "Pod was rejected: " and its message, and a
// Warning Event. A pod that runs already (found again after a restart) is kept.
func (a *Agent) admit(pod *corev1.Pod) {
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" || pod.DeletionTimestamp != nil {
		return
	}
	for _, ad := range a.admitters {
		ok, reason, message := ad.Admit(pod)
		if ok {
			continue
		}
		a.log.Info("pod rejected", "pod", pod.Namespace+"/"+pod.Name, "reason", reason, "message", message)
		a.recorder.Eventf(pod, corev1.EventTypeWarning, reason, "%s", message)
		a.sync.End(pod.UID, podsync.Ending{Reason: reason, Message: "Pod was rejected: " + message, Rejected: true})
		return
	}
}

// admittedPods are the node's pods that passed admission before (they have a worker) and
// may still run, with the resources the node granted them: what a new pod or a resize
// must fit beside, and whose host ports a new pod's must not collide with. A pod being
// deleted holds its resources until it has stopped, as the kubelet's filterOutInactivePods
// counts it.
func (a *Agent) admittedPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range a.nodePods() {
		if !podsync.IsTerminal(pod.Status.Phase) && a.workers.Known(pod.UID) {
			out = append(out, a.sync.AllocatedPod(pod))
		}
	}
	return out
}

// osAdmission refuses a pod made for another operating system, as the kubelet's predicate
// admit handler does before it checks resources: one labelled kubernetes.io/os with
// another OS than the node's, or whose spec.os names another.
type osAdmission struct{}

func (osAdmission) Admit(pod *corev1.Pod) (ok bool, reason, message string) {
	if os, labelled := pod.Labels[corev1.LabelOSStable]; labelled && os != goruntime.GOOS {
		return false, "PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != goruntime.GOOS {
		return false, "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"
	}
	return true, "", ""
}

// groupsPolicyAdmission refuses a pod asking for supplementalGroupsPolicy Strict unless the
// node's status.features says it supports it, as the kubelet's predicate admission
// (rejectPodAdmissionBasedOnSupplementalGroupsPolicy) does after the OS checks. minilet's
// node does not: it always adds the groups the image lists for the user, which would
// silently be Merge.
type groupsPolicyAdmission struct {
	Node func(fresh bool) *corev1.Node
}

func (g groupsPolicyAdmission) Admit(pod *corev1.Pod) (ok bool, reason, message string) {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict {
		return true, "", ""
	}
	if node := g.Node(false); node != nil && node.Status.Features != nil && ptr.Deref(node.Status.Features.SupplementalGroupsPolicy, false) {
		return true, "", ""
	}
	return false, "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node"
}

// nodeForAdmission is the node the admitters match pods against: as the node informer has
// it, or read from the API when fresh or not in the informer yet; nil when it cannot be read.
func (a *Agent) nodeForAdmission(fresh bool) *corev1.Node {
	if !fresh {
		if node, err := a.nodes.Get(a.cfg.NodeName); err == nil {
			return node
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		a.log.Warn("read the node for pod admission", "err", err)
		return nil
	}
	return node
}
