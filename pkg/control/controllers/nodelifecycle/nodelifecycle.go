// Package nodelifecycle watches nodes' heartbeats as kube-controller-manager's node
// lifecycle controller does: a node whose minilet stops posting status and renewing its
// Lease for the grace period (judged by when the controller saw them change, never by the
// times written in them) gets Ready=Unknown, its pods are marked not ready, and it is
// tainted unreachable (not-ready when Ready is False) with NoSchedule and NoExecute; pods on
// a NoExecute-tainted node are evicted once their toleration of the taint runs out. The
// taints go when the node reports Ready again. It also taints nodes by their other conditions
// (memory, disk and PID pressure, NetworkUnavailable) and cordon with NoSchedule, as
// Kubernetes' TaintNodesByCondition does, and takes those taints away when the condition ends.
package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/minik8s/minik8s/internal/controller/disruption"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"k8s.io/utils/clock"
)

// Options are kube-controller-manager's flags of this controller.
type Options struct {
	MonitorPeriod time.Duration // --node-monitor-period (DefaultMonitorPeriod)
	GracePeriod   time.Duration // --node-monitor-grace-period (DefaultGracePeriod)
}

// kube-controller-manager's defaults of Options.
const (
	DefaultMonitorPeriod = 5 * time.Second
	DefaultGracePeriod   = 50 * time.Second // 40 s before Kubernetes 1.32
)

// startupGracePeriod is how long a node that never posted its status has from its
// creation, kube-controller-manager's --node-startup-grace-period default.
const startupGracePeriod = time.Minute

// Controller is the node lifecycle controller.
type Controller struct {
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	pods     corelisters.PodLister
	leases   coordinationlisters.LeaseLister
	synced   []cache.InformerSynced
	recorder record.EventRecorder
	// evictions records the taint manager's events, under kube-controller-manager's
	// taint-eviction-controller (a controller of its own there since v1.29).
	evictions record.EventRecorder
	clock     clock.Clock
	opts      Options
	log       *slog.Logger
	health    map[string]*nodeHealth // by node name; only Run's goroutine touches it
	// waiting is, by node, the pods whose eviction waits for a toleration's time to run
	// out, and when it runs out: kube's taint eviction queue, whose cancelled entries get an
	// event. Only Run's goroutine touches it.
	waiting map[string]map[types.NamespacedName]time.Time
	// zones pace the NoExecute tainting of each failure zone's nodes, and allDisrupted is
	// kube's master disruption mode (zones.go). Only Run's goroutine touches them.
	zones        map[string]*zone
	allDisrupted bool
	// nodeChanged wakes Run for a round: a new node, or a change of a node's taints or of
	// the taints its state calls for.
	nodeChanged chan struct{}
}

// nodeHealth is what the controller last saw of a node's heartbeats and when it saw them
// change: its probe time. The times a node writes are its claims (a skewed clock, or a
// renewTime in 2099); only a change the controller observes is a sign of life, as in
// Kubernetes' node lifecycle controller.
type nodeHealth struct {
	uid       types.UID        // the node's, for the event when it goes
	heartbeat metav1.Time      // the Ready condition's lastHeartbeatTime
	renew     metav1.MicroTime // the Lease's renewTime
	probe     time.Time
}

// New wires the controller to the shared informers.
// recorder records the node controller's events, evictions the taint manager's.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, recorder, evictions record.EventRecorder, opts Options, log *slog.Logger) (*Controller, error) {
	nodes, pods := factory.Core().V1().Nodes(), factory.Core().V1().Pods()
	leases := factory.Coordination().V1().Leases()
	c := &Controller{
		client: client, nodes: nodes.Lister(), pods: pods.Lister(), leases: leases.Lister(),
		synced:   []cache.InformerSynced{nodes.Informer().HasSynced, pods.Informer().HasSynced, leases.Informer().HasSynced},
		recorder: recorder, evictions: evictions, clock: clock.RealClock{}, opts: opts, log: log,
		health: map[string]*nodeHealth{}, waiting: map[string]map[types.NamespacedName]time.Time{}, zones: map[string]*zone{},
		nodeChanged: make(chan struct{}, 1),
	}
	// As kube's taint-eviction-controller, a change of a node's taints (kubectl taint) is
	// acted on at once, not at the next monitor period; as its NoSchedule tainting pass, so
	// is a new node (created with the not-ready taint) and a change of what the node's
	// conditions or cordon call for.
	wake := func() {
		select {
		case c.nodeChanged <- struct{}{}:
		default: // a round is already due
		}
	}
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { wake() },
		UpdateFunc: func(old, cur any) {
			o, ok := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if ok && ok2 && (!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				!equality.Semantic.DeepEqual(wantedTaints(o), wantedTaints(n))) {
				wake()
			}
		}})
	return c, err
}

// Run checks every node each monitor period, when a waiting eviction is due and when a
// node comes or changes as nodeChanged tells, until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	tick := time.NewTicker(c.opts.MonitorPeriod)
	defer tick.Stop()
	for {
		nodes, _ := c.nodes.List(labels.Everything())
		c.judgeZones(nodes, c.clock.Now())
		seen := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			seen[n.Name] = true
			if _, known := c.health[n.Name]; !known {
				c.recorder.Eventf(n, corev1.EventTypeNormal, "RegisteredNode", "Node %s event: Registered Node %s in Controller", n.Name, n.Name)
			}
			if err := c.monitor(ctx, n); err != nil {
				c.log.Info("node check failed, will retry", "node", n.Name, "err", err)
			}
			if err := c.reconcileLabels(ctx, n); err != nil {
				c.log.Info("node labels not reconciled, will retry", "node", n.Name, "err", err)
			}
		}
		for name, h := range c.health {
			if !seen[name] {
				c.recorder.Eventf(&corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: h.uid},
					corev1.EventTypeNormal, "RemovingNode", "Node %s event: Removing Node %s from Controller", name, name)
				delete(c.health, name)
				delete(c.waiting, name)
			}
		}
		wake, stop := c.nextDeadline()
		select {
		case <-ctx.Done():
			stop()
			return
		case <-tick.C:
		case <-wake:
		case <-c.nodeChanged:
		}
		stop()
	}
}

// nextDeadline wakes Run when the first waiting eviction's time runs out, so a pod goes when
// its tolerationSeconds end, as kube's timed queue fires, not at the next monitor period.
func (c *Controller) nextDeadline() (<-chan time.Time, func()) {
	var first time.Time
	for _, waiting := range c.waiting {
		for _, at := range waiting {
			if first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	if first.IsZero() {
		return nil, func() {}
	}
	t := c.clock.NewTimer(max(first.Sub(c.clock.Now()), 0))
	return t.C(), func() { t.Stop() }
}

// lastProbe is when the controller last saw the node show life: its Ready heartbeat or its
// Lease's renewTime changed. A node seen for the first time (or by a controller that just
// started) gets a full grace period from now, as in Kubernetes.
func (c *Controller) lastProbe(n *corev1.Node, now time.Time) time.Time {
	_, ready := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady)
	h, ok := c.health[n.Name]
	if !ok {
		h = &nodeHealth{uid: n.UID, probe: now}
		if ready == nil { // never posted its status: counted from its creation, as kube's
			h.probe = n.CreationTimestamp.Time
		}
		c.health[n.Name] = h
	}
	if ready != nil && !ready.LastHeartbeatTime.Equal(&h.heartbeat) {
		h.heartbeat, h.probe = ready.LastHeartbeatTime, now
	}
	if lease, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(n.Name); err == nil && lease.Spec.RenewTime != nil && !lease.Spec.RenewTime.Equal(&h.renew) {
		h.renew, h.probe = *lease.Spec.RenewTime, now
	}
	return h.probe
}

func (c *Controller) monitor(ctx context.Context, n *corev1.Node) error {
	now := c.clock.Now()
	_, ready := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady)
	grace := c.opts.GracePeriod
	if ready == nil {
		grace = startupGracePeriod
	}
	if now.Sub(c.lastProbe(n, now)) > grace && (ready == nil || ready.Status != corev1.ConditionUnknown) {
		if err := c.markUnknown(ctx, n, now); err != nil {
			return err
		}
		return nil // the next round sees the new status and taints the node
	}
	if err := c.syncTaints(ctx, n, now); err != nil {
		return err
	}
	return c.evict(ctx, n, now)
}

// betaLabels are the deprecated node labels kept equal to their stable ones, as kube's
// node lifecycle controller does (labelReconcileInfo): workloads that still select on
// beta.kubernetes.io/os find every node, whoever registered it.
var betaLabels = map[string]string{corev1.LabelOSStable: kubeletapis.LabelOS, corev1.LabelArchStable: kubeletapis.LabelArch}

// reconcileLabels gives the node each beta label its stable label calls for.
func (c *Controller) reconcileLabels(ctx context.Context, n *corev1.Node) error {
	set := map[string]string{}
	for stable, beta := range betaLabels {
		if v, ok := n.Labels[stable]; ok && n.Labels[beta] != v {
			set[beta] = v
		}
	}
	if len(set) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": set}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// markUnknown sets every condition the kubelet posts to Unknown, in kube's words (one it
// never posted says so), and the node's pods not ready (they may be running, but nobody
// knows).
func (c *Controller) markUnknown(ctx context.Context, n *corev1.Node, now time.Time) error {
	node := n.DeepCopy()
	for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		switch _, cond := nodeutil.GetNodeCondition(&node.Status, t); {
		case cond == nil:
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: metav1.NewTime(now)})
		case cond.Status != corev1.ConditionUnknown:
			cond.Status, cond.Reason, cond.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
			cond.LastTransitionTime = metav1.NewTime(now)
		}
	}
	if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return err
	}
	c.recorder.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
	pods, err := c.podsOn(n.Name)
	if err != nil {
		return err
	}
	for _, p := range pods {
		pod := p.DeepCopy()
		changed := false
		for i := range pod.Status.Conditions {
			if cond := &pod.Status.Conditions[i]; cond.Type == corev1.PodReady && cond.Status != corev1.ConditionFalse {
				cond.Status, cond.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(now)
				changed = true
			}
		}
		if !changed {
			continue
		}
		if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		c.recorder.Eventf(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return nil
}

func (c *Controller) podsOn(node string) ([]*corev1.Pod, error) {
	all, err := c.pods.List(labels.Everything())
	var out []*corev1.Pod
	for _, p := range all {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, err
}

// conditionTaints are the NoSchedule taints a node's conditions call for besides Ready's
// (TaintNodesByCondition): the scheduler keeps new pods away from a node under pressure, with
// a broken network or cordoned, unless they tolerate it (DaemonSet pods do).
var conditionTaints = []struct {
	condition corev1.NodeConditionType
	key       string
}{
	{corev1.NodeMemoryPressure, corev1.TaintNodeMemoryPressure},
	{corev1.NodeDiskPressure, corev1.TaintNodeDiskPressure},
	{corev1.NodePIDPressure, corev1.TaintNodePIDPressure},
	{corev1.NodeNetworkUnavailable, corev1.TaintNodeNetworkUnavailable},
}

// ownedTaintKeys are the taints this controller puts and takes away; any other taint on a
// node (the admin's) is left as it is.
var ownedTaintKeys = map[string]bool{
	corev1.TaintNodeUnreachable: true, corev1.TaintNodeNotReady: true, corev1.TaintNodeUnschedulable: true,
	corev1.TaintNodeMemoryPressure: true, corev1.TaintNodeDiskPressure: true, corev1.TaintNodePIDPressure: true,
	corev1.TaintNodeNetworkUnavailable: true,
}

// wantedTaints are the taints the node's state calls for, in a fixed order: unreachable (Ready
// Unknown) or not-ready (Ready False) with NoSchedule and NoExecute, then NoSchedule for each
// pressure or NetworkUnavailable condition that is True, and for spec.unschedulable (cordon).
func wantedTaints(n *corev1.Node) []corev1.Taint {
	var want []corev1.Taint
	if _, ready := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady); ready != nil && ready.Status != corev1.ConditionTrue {
		key := corev1.TaintNodeNotReady
		if ready.Status == corev1.ConditionUnknown {
			key = corev1.TaintNodeUnreachable
		}
		want = append(want, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule}, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute})
	}
	for _, ct := range conditionTaints {
		if _, cond := nodeutil.GetNodeCondition(&n.Status, ct.condition); cond != nil && cond.Status == corev1.ConditionTrue {
			want = append(want, corev1.Taint{Key: ct.key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if n.Spec.Unschedulable {
		want = append(want, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	return want
}

// syncTaints puts the taints the node's state calls for (wantedTaints) and takes away the
// ones of ours it no longer calls for, keeping when each taint was added.
func (c *Controller) syncTaints(ctx context.Context, n *corev1.Node, now time.Time) error {
	want := wantedTaints(n)
	wanted := func(t corev1.Taint) bool {
		for _, w := range want {
			if w.MatchTaint(&t) {
				return true
			}
		}
		return false
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if ownedTaintKeys[t.Key] && (!wanted(t) || c.allDisrupted && readinessNoExecute(t)) {
			continue // the node's state moved on, or every node is down (zones.go)
		}
		taints = append(taints, t)
	}
	// Turning not-ready into unreachable or back swaps the NoExecute taint at once; a node
	// that had none waits for its zone's turn, as kube's zoneNoExecuteTainter.
	swap := slices.ContainsFunc(n.Spec.Taints, readinessNoExecute)
	added := metav1.NewTime(now)
	for _, w := range want {
		have := false
		for i := range taints {
			have = have || taints[i].MatchTaint(&w)
		}
		if have {
			continue
		}
		if w.Effect == corev1.TaintEffectNoExecute && (c.allDisrupted || !swap && !c.mayTaintNoExecute(n)) {
			continue
		}
		w.TimeAdded = &added // on every taint it adds, as kube's SwapNodeControllerTaint
		taints = append(taints, w)
	}
	if len(taints) == len(n.Spec.Taints) && sameTaints(taints, n.Spec.Taints) {
		return nil
	}
	node := n.DeepCopy()
	node.Spec.Taints = taints
	_, err := c.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	return err
}

// readinessNoExecute says whether t is the not-ready or unreachable NoExecute taint.
func readinessNoExecute(t corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoExecute && (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable)
}

func sameTaints(a, b []corev1.Taint) bool {
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Effect != b[i].Effect || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

// evict deletes the pods on a NoExecute-tainted node whose tolerations have run out (or
// that tolerate the taint not at all), as the taint manager does.
func (c *Controller) evict(ctx context.Context, n *corev1.Node, now time.Time) (err error) {
	var noExecute []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			noExecute = append(noExecute, t)
		}
	}
	waited := c.waiting[n.Name]
	if len(noExecute) == 0 && len(waited) == 0 {
		return nil
	}
	pods, err := c.podsOn(n.Name)
	if err != nil {
		return err
	}
	waiting := map[types.NamespacedName]time.Time{}
	defer func() {
		if err != nil { // the pods not looked at yet wait on
			for key, at := range waited {
				if _, ok := waiting[key]; !ok {
					waiting[key] = at
				}
			}
		}
		c.cancelled(waited, waiting, pods)
	}()
	if len(noExecute) == 0 {
		delete(c.waiting, n.Name)
		return nil
	}
	c.waiting[n.Name] = waiting
	for _, pod := range pods {
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		at, scheduled := waited[key]
		if pod.DeletionTimestamp != nil {
			if scheduled {
				waiting[key] = at // kube's queue keeps it until the pod is gone
			}
			continue
		}
		switch tolerated, d := tolerationTime(pod, noExecute); {
		case !tolerated:
			// Evicted at once; what waited is cancelled, with its event, as kube does.
		case d < 0:
			continue // tolerated forever: nothing waits
		default:
			if !scheduled {
				// The timer starts when the taint is seen on the pod's node and keeps its
				// first deadline until cancelled (kube's processPodOnNode), whatever the
				// taint's timeAdded says.
				at = now.Add(d)
			}
			if now.Before(at) {
				waiting[key] = at
				continue
			}
			delete(waited, key) // its time ran out: evicted, not cancelled
		}
		c.evictions.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
		err = disruption.Mark(ctx, c.client, pod, "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		err = c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return nil
}

// cancelled records, as kube's taint-eviction-controller, "Cancelling deletion of Pod" for
// each pod whose eviction waited and waits no more: its node's taints went, it now
// tolerates them forever, or it was deleted.
func (c *Controller) cancelled(waited, waiting map[types.NamespacedName]time.Time, pods []*corev1.Pod) {
	for key := range waited {
		if _, ok := waiting[key]; ok {
			continue
		}
		var obj runtime.Object = &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: key.Namespace, Name: key.Name}
		for _, pod := range pods {
			if pod.Namespace == key.Namespace && pod.Name == key.Name {
				obj = pod // with its uid: kubectl describe pod finds the event
			}
		}
		c.evictions.Eventf(obj, corev1.EventTypeNormal, "TaintManagerEviction", "Cancelling deletion of Pod %s", key)
	}
}

// tolerationTime is how long the pod may stay on a node with these NoExecute taints, as
// kube's GetMatchingTolerations and getMinTolerationTime: not tolerated when a taint has no
// toleration; else the shortest tolerationSeconds of the tolerations used (0 for one at or
// below 0), or -1, forever, when none of them sets it.
func tolerationTime(pod *corev1.Pod, taints []corev1.Taint) (tolerated bool, d time.Duration) {
	d = -1
	for i := range taints {
		var match *corev1.Toleration
		for j := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[j].ToleratesTaint(klog.Background(), &taints[i], false) {
				match = &pod.Spec.Tolerations[j]
				break
			}
		}
		if match == nil {
			return false, 0
		}
		if match.TolerationSeconds == nil {
			continue
		}
		if s := time.Duration(max(*match.TolerationSeconds, 0)) * time.Second; d < 0 || s < d {
			d = s
		}
	}
	return true, d
}
