package scheduler

import (
	"slices"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// addHandlers feeds the cache (bound pods, nodes) and the queue (pending pods of our
// profiles) from the shared informers, and turns changes into cluster events that move
// unschedulable pods back to the queue.
func (s *Scheduler) addHandlers(f informers.SharedInformerFactory) error {
	core := f.Core().V1()
	podInf, nodeInf := core.Pods().Informer(), core.Nodes().Informer()
	pvcInf, pvInf := core.PersistentVolumeClaims().Informer(), core.PersistentVolumes().Informer()
	nsInf, pdbInf := core.Namespaces().Informer(), f.Policy().V1().PodDisruptionBudgets().Informer()
	s.synced = []cache.InformerSynced{nsInf.HasSynced, pdbInf.HasSynced} // read through listers
	// The shared informers may be running long before this scheduler leads: a handler added
	// then is replayed the existing objects asynchronously, so the scheduler waits for its
	// own handlers to have seen them (kube-scheduler's WaitForHandlersSync), not only for
	// the informers, or it would place pods before its cache counts the bound ones.
	add := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return err
		}
		s.synced = append(s.synced, reg.HasSynced)
		s.handlers = append(s.handlers, func() { _ = inf.RemoveEventHandler(reg) })
		return nil
	}
	if err := add(podInf, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPod(nil, obj.(*corev1.Pod)) },
		UpdateFunc: func(old, cur any) { s.onPod(old.(*corev1.Pod), cur.(*corev1.Pod)) },
		DeleteFunc: s.onPodDelete,
	}); err != nil {
		return err
	}
	if err := add(nodeInf, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s.cache.AddNode(obj.(*corev1.Node))
			s.queue.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindNode, Action: framework.Add}, nil)
		},
		UpdateFunc: func(old, cur any) {
			o, n := old.(*corev1.Node), cur.(*corev1.Node)
			s.cache.UpdateNode(n)
			if action := nodeChange(o, n); action != 0 {
				s.queue.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindNode, Action: action}, nil)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				s.cache.RemoveNode(n.Name)
				s.queue.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindNode, Action: framework.Delete}, nil)
			}
		},
	}); err != nil {
		return err
	}
	for kind, inf := range map[string]cache.SharedIndexInformer{framework.KindPersistentVolumeClaim: pvcInf, framework.KindPersistentVolume: pvInf} {
		if err := add(inf, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.queue.MoveOnEvent(framework.ClusterEvent{Kind: kind, Action: framework.Add}, nil) },
			UpdateFunc: func(any, any) { s.queue.MoveOnEvent(framework.ClusterEvent{Kind: kind, Action: framework.Update}, nil) },
		}); err != nil {
			return err
		}
	}
	return nil
}

// nodeChange classifies a node update as kube-scheduler does; heartbeats are no change.
func nodeChange(o, n *corev1.Node) framework.ActionType {
	var a framework.ActionType
	if !equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) {
		a |= framework.UpdateNodeAllocatable
	}
	if !labels.Equals(o.Labels, n.Labels) {
		a |= framework.UpdateNodeLabel
	}
	if o.Spec.Unschedulable != n.Spec.Unschedulable || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) {
		a |= framework.UpdateNodeTaint
	}
	if conditionStatuses(o) != conditionStatuses(n) {
		a |= framework.UpdateNodeCondition
	}
	if !slices.Equal(o.Status.DeclaredFeatures, n.Status.DeclaredFeatures) {
		a |= framework.UpdateNodeDeclaredFeature
	}
	return a
}

func conditionStatuses(n *corev1.Node) string {
	out := ""
	for _, c := range n.Status.Conditions {
		out += string(c.Type) + "=" + string(c.Status) + ","
	}
	return out
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func (s *Scheduler) onPod(old, pod *corev1.Pod) {
	if pod.Spec.NodeName != "" {
		s.onAssignedPod(old, pod)
		return
	}
	if s.profiles[pod.Spec.SchedulerName] == nil || terminal(pod) {
		return // another scheduler's pod: left alone
	}
	s.nominated.set(pod)
	if pod.DeletionTimestamp != nil {
		s.queue.Delete(pod)
		return
	}
	if s.cache.IsAssumed(pod.UID) {
		return // being bound
	}
	if old == nil {
		s.queue.Add(pod)
	} else {
		s.queue.Update(pod)
	}
}

func (s *Scheduler) onAssignedPod(old, pod *corev1.Pod) {
	if terminal(pod) {
		s.cache.RemovePod(pod)
		if old != nil && !terminal(old) {
			s.queue.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindPod, Action: framework.Delete}, nil)
		}
		return
	}
	if old == nil || old.Spec.NodeName == "" {
		s.nominated.delete(pod.UID)
		s.cache.AddPod(pod)
		if old != nil {
			s.queue.Delete(pod) // bound (by us or another scheduler) while pending
		}
		s.queue.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindPod, Action: framework.Add}, func(pending *corev1.Pod) bool {
			return addedPodMayHelp(pending, pod)
		})
		return
	}
	if s.cache.UpdatePod(pod) {
		s.queue.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindPod, Action: framework.UpdatePodScaleDown}, nil)
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		s.queue.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindPod, Action: framework.UpdatePodLabel}, nil)
	}
}

func (s *Scheduler) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	s.queue.Delete(pod)
	s.nominated.delete(pod.UID)
	if pod.Spec.NodeName != "" || s.cache.IsAssumed(pod.UID) {
		s.cache.RemovePod(pod)
		s.queue.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindPod, Action: framework.Delete}, nil)
	}
}

// addedPodMayHelp is the queueing hint for a pod newly placed: it can only help a pending
// pod whose required pod affinity or topology spread selects it (adding a pod never
// resolves anti-affinity, resources or ports).
func addedPodMayHelp(pending, added *corev1.Pod) bool {
	if a := pending.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			t, err := framework.NewAffinityTerm(pending, &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
			if err == nil && (t.NamespaceSelector != nil || t.Namespaces.Has(added.Namespace)) && t.Selector.Matches(labels.Set(added.Labels)) {
				return true
			}
		}
	}
	if pending.Namespace != added.Namespace {
		return false
	}
	for _, c := range pending.Spec.TopologySpreadConstraints {
		sel, err := metav1LabelSelector(c)
		if err == nil && sel.Matches(labels.Set(added.Labels)) {
			return true
		}
	}
	return false
}
