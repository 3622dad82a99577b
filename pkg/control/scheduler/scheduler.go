// Package scheduler binds pending pods to nodes: it filters nodes that can run a pod
// (ready, schedulable, selector, taints, pod count, resources), scores the rest, and posts
// a Binding. It is a client-go program like every component but the API server.
package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controllers/workloop"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// Name is the schedulerName this scheduler serves.
const Name = corev1.DefaultSchedulerName

// Scheduler places pods with no node on a node.
type Scheduler struct {
	client   kubernetes.Interface
	pods     listers.PodLister
	nodes    listers.NodeLister
	queue    workqueue.TypedRateLimitingInterface[types.NamespacedName]
	recorder record.EventRecorder
	log      *slog.Logger

	mu      sync.Mutex
	assumed map[types.UID]string // bound by us, not yet seen bound in the informer
	synced  []cache.InformerSynced
}

// New wires the scheduler to a shared informer factory; call Run after factory.Start.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, log *slog.Logger) (*Scheduler, error) {
	podInf, nodeInf := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	s := &Scheduler{
		client: client,
		pods:   podInf.Lister(),
		nodes:  nodeInf.Lister(),
		// Like kube-scheduler's backoff: a pod that did not fit waits 1s, doubling to 60s;
		// node changes requeue it at once (requeuePending).
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](time.Second, time.Minute)),
		recorder: recorder,
		log:      log,
		assumed:  map[types.UID]string{},
		synced:   []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
	}
	_, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.onPod,
		UpdateFunc: func(_, obj any) { s.onPod(obj) },
		DeleteFunc: func(obj any) { s.forget(obj) },
	})
	if err != nil {
		return nil, err
	}
	// A node that appears or changes may make room for every waiting pod.
	_, err = nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.requeuePending() },
		UpdateFunc: func(old, cur any) { s.onNodeUpdate(old, cur) },
	})
	return s, err
}

func needsScheduling(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && pod.Spec.SchedulerName == Name &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func (s *Scheduler) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		s.mu.Lock()
		delete(s.assumed, pod.UID)
		s.mu.Unlock()
		return
	}
	if needsScheduling(pod) {
		s.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	}
}

func (s *Scheduler) forget(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		s.mu.Lock()
		delete(s.assumed, pod.UID)
		s.mu.Unlock()
	}
}

func (s *Scheduler) onNodeUpdate(old, cur any) {
	o, n := old.(*corev1.Node), cur.(*corev1.Node)
	// Heartbeats change only timestamps; requeue when something a filter reads changed.
	if o.Spec.Unschedulable != n.Spec.Unschedulable || len(o.Spec.Taints) != len(n.Spec.Taints) ||
		nodeReadyStatus(o) != nodeReadyStatus(n) || !labels.Equals(o.Labels, n.Labels) {
		s.requeuePending()
	}
}

func nodeReadyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func (s *Scheduler) requeuePending() {
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if needsScheduling(p) {
			s.queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
}

// Run schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return
	}
	s.log.Info("scheduler started")
	go func() {
		// Pods that failed for want of room are retried periodically too, as in kube-scheduler.
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.requeuePending()
			}
		}
	}()
	workloop.Run(ctx, s.queue, s.log, func(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
		return 0, s.scheduleOne(ctx, key)
	})
}

func (s *Scheduler) scheduleOne(ctx context.Context, key types.NamespacedName) error {
	pod, err := s.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !needsScheduling(pod) || s.isAssumed(pod.UID) {
		return nil
	}
	node, reasons, err := s.pickNode(pod)
	if err != nil {
		return err
	}
	if node == "" {
		msg := unschedulableMessage(reasons)
		s.recorder.Event(pod, corev1.EventTypeWarning, "FailedScheduling", msg)
		s.markUnschedulable(ctx, pod, msg)
		return fmt.Errorf("%s", msg)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	s.assume(pod.UID, node)
	if err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		s.forget(pod)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // deleted or bound meanwhile: nothing left to do
		}
		return fmt.Errorf("bind %s to %s: %w", key, node, err)
	}
	s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
	return nil
}

// pickNode runs the filters over every node and returns the best-scored fit, or the reasons
// (reason → node count) why none fits.
func (s *Scheduler) pickNode(pod *corev1.Pod) (string, map[string]int, error) {
	infos, err := s.nodeInfos()
	if err != nil {
		return "", nil, err
	}
	reasons := map[string]int{}
	best, bestScore := "", -1.0
	for _, n := range infos {
		if why := fits(pod, n); why != "" {
			reasons[why]++
			continue
		}
		if sc := score(n); sc > bestScore {
			best, bestScore = n.node.Name, sc
		}
	}
	return best, reasons, nil
}

func fits(pod *corev1.Pod, n *nodeInfo) string {
	for _, f := range filters {
		if why := f(pod, n); why != "" {
			return why
		}
	}
	return ""
}

// nodeInfos sums, per node, the pods bound to it (and those we bound but the informer has
// not shown yet) and their requests. Nodes come sorted by name so ties are stable.
func (s *Scheduler) nodeInfos() ([]*nodeInfo, error) {
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	byName := map[string]*nodeInfo{}
	infos := make([]*nodeInfo, 0, len(nodes))
	for _, n := range nodes {
		ni := &nodeInfo{node: n, requested: corev1.ResourceList{}}
		byName[n.Name] = ni
		infos = append(infos, ni)
	}
	s.mu.Lock()
	assumed := make(map[types.UID]string, len(s.assumed))
	for uid, node := range s.assumed {
		assumed[uid] = node
	}
	s.mu.Unlock()
	for _, p := range pods {
		node := p.Spec.NodeName
		if node == "" {
			node = assumed[p.UID]
		}
		ni := byName[node]
		if ni == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ni.pods++
		for name, q := range podRequests(p) {
			sum := ni.requested[name]
			sum.Add(q)
			ni.requested[name] = sum
		}
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].node.Name < infos[j].node.Name })
	return infos, nil
}

func (s *Scheduler) assume(uid types.UID, node string) {
	s.mu.Lock()
	s.assumed[uid] = node
	s.mu.Unlock()
}

func (s *Scheduler) isAssumed(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.assumed[uid]
	return ok
}

// markUnschedulable records PodScheduled=False/Unschedulable like kube-scheduler, so
// `kubectl describe` shows why the pod waits.
func (s *Scheduler) markUnschedulable(ctx context.Context, pod *corev1.Pod, msg string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message == msg {
			return
		}
	}
	p := pod.DeepCopy()
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.Now()}
	replaced := false
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			p.Status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		p.Status.Conditions = append(p.Status.Conditions, cond)
	}
	if _, err := s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		s.log.Debug("could not record unschedulable condition", "pod", p.Name, "err", err)
	}
}

// unschedulableMessage reads like kube-scheduler's: "0/3 nodes are available: 2 Too many pods, 1 node(s) were not ready."
func unschedulableMessage(reasons map[string]int) string {
	total := 0
	parts := make([]string, 0, len(reasons))
	for why, n := range reasons {
		total += n
		parts = append(parts, fmt.Sprintf("%d %s", n, why))
	}
	sort.Strings(parts)
	if total == 0 {
		return "0/0 nodes are available: no nodes registered."
	}
	return fmt.Sprintf("0/%d nodes are available: %s.", total, strings.Join(parts, ", "))
}
