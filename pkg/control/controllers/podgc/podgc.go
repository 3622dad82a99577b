// Package podgc is kube-controller-manager's pod garbage collector (pkg/controller/podgc)
// for the pods no kubelet will ever finish: a pod bound to a node that does not exist (its
// node deleted, or a nodeName naming no node) is marked Failed with the DisruptionTarget
// condition DeletionByPodGC and force-deleted once the node has stayed missing for the
// quarantine (40 s); a terminating pod on a NotReady node tainted
// node.kubernetes.io/out-of-service, and a terminating pod never scheduled, are marked
// Failed and force-deleted; finished pods above --terminated-pod-gc-threshold (12500) are
// deleted, evicted ones first, then the oldest. It looks every 20 s, as kube's.
package podgc

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/controller/nodeready"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Name is the controller's name, as kube-controller-manager's --controllers knows it.
const Name = "pod-garbage-collector"

// DefaultTerminatedPodThreshold is kube-controller-manager's --terminated-pod-gc-threshold
// default: how many finished pods may be kept before the oldest are deleted.
const DefaultTerminatedPodThreshold = 12500

const (
	checkPeriod    = 20 * time.Second // kube's gcCheckPeriod
	quarantineTime = 40 * time.Second // how long a missing node may take to show up
)

// Controller collects the pods described above.
type Controller struct {
	client kubernetes.Interface
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	clock  clock.Clock
	log    *slog.Logger
	// terminatedThreshold is how many finished pods are kept (0 or less: all).
	terminatedThreshold int
	// missing holds when each node named by a pod was first found missing.
	missing map[string]time.Time
}

// New wires the collector to the shared pod and node informers; it keeps at most
// terminatedThreshold finished pods (0 or less: no limit, as kube's).
func New(client kubernetes.Interface, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer, terminatedThreshold int, clk clock.Clock, log *slog.Logger) *Controller {
	return &Controller{client: client, pods: pods.Lister(), nodes: nodes.Lister(),
		synced: []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced},
		clock:  clk, log: log, terminatedThreshold: terminatedThreshold, missing: map[string]time.Time{}}
}

// Run collects every 20 s until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	wait.UntilWithContext(ctx, c.gc, checkPeriod)
}

func (c *Controller) gc(ctx context.Context) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return
	}
	if c.terminatedThreshold > 0 {
		c.gcTerminated(ctx, pods)
	}
	c.gcTerminating(ctx, pods)
	c.gcOrphaned(ctx, pods)
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil && pod.Spec.NodeName == "" {
			c.markFailedAndDelete(ctx, pod, nil, "unscheduled terminating")
		}
	}
}

// gcTerminated deletes the finished pods above the threshold, evicted ones first (they
// matter least to the controllers that made them), then the oldest, as kube's gcTerminated.
func (c *Controller) gcTerminated(ctx context.Context, pods []*corev1.Pod) {
	var finished []*corev1.Pod
	for _, pod := range pods {
		if phase := pod.Status.Phase; phase != corev1.PodPending && phase != corev1.PodRunning && phase != corev1.PodUnknown {
			finished = append(finished, pod)
		}
	}
	excess := len(finished) - c.terminatedThreshold
	if excess <= 0 {
		return
	}
	c.log.Info("garbage collecting finished pods", "count", excess, "threshold", c.terminatedThreshold)
	evicted := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" }
	slices.SortFunc(finished, func(a, b *corev1.Pod) int {
		if ea, eb := evicted(a), evicted(b); ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		if byAge := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); byAge != 0 {
			return byAge
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, pod := range finished[:excess] {
		c.markFailedAndDelete(ctx, pod, nil, "terminated pods above the threshold")
	}
}

// gcTerminating force-deletes the terminating pods of a NotReady node its administrator
// marked out of service (the node is known to be shut down: its kubelet will not).
func (c *Controller) gcTerminating(ctx context.Context, pods []*corev1.Pod) {
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil || pod.Spec.NodeName == "" {
			continue
		}
		node, err := c.nodes.Get(pod.Spec.NodeName)
		if err != nil {
			continue
		}
		if nodeready.Ready(node) || !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService }) {
			continue
		}
		c.markFailedAndDelete(ctx, pod, nil, "terminating on an out-of-service node")
	}
}

// gcOrphaned deletes the pods of nodes missing for longer than the quarantine, after
// asking the API server (not the cache) that the node is indeed gone.
func (c *Controller) gcOrphaned(ctx context.Context, pods []*corev1.Pod) {
	now := c.clock.Now()
	named := map[string]bool{}
	for _, pod := range pods {
		name := pod.Spec.NodeName
		if name == "" {
			continue
		}
		if _, err := c.nodes.Get(name); !apierrors.IsNotFound(err) {
			continue
		}
		named[name] = true
		if _, ok := c.missing[name]; !ok {
			c.missing[name] = now
		}
	}
	gone := map[string]bool{}
	for name, since := range c.missing {
		if !named[name] {
			delete(c.missing, name) // it showed up, or its pods went
			continue
		}
		if now.Sub(since) < quarantineTime {
			continue
		}
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone[name] = true
		case err == nil:
			delete(c.missing, name)
		}
	}
	for _, pod := range pods {
		if !gone[pod.Spec.NodeName] {
			continue
		}
		cond := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, ObservedGeneration: pod.Generation,
			Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists", LastTransitionTime: metav1.NewTime(now)}
		c.markFailedAndDelete(ctx, pod, cond, "orphaned")
	}
}

// markFailedAndDelete moves a pod that has not finished to Failed (with cond, if any) so
// that its owner sees it end, then deletes it with no grace period, as kube's
// markFailedAndDeletePodWithCondition.
func (c *Controller) markFailedAndDelete(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition, why string) {
	pods := c.client.CoreV1().Pods(pod.Namespace)
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		status := map[string]any{"phase": corev1.PodFailed, "observedGeneration": pod.Generation}
		if cond != nil {
			status["conditions"] = []*corev1.PodCondition{cond}
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID}, "status": status})
		if err == nil {
			_, err = pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		}
		if err != nil {
			if !apierrors.IsNotFound(err) {
				c.log.Info("failed to mark pod failed before deleting it", "pod", pod.Namespace+"/"+pod.Name, "why", why, "err", err)
			}
			return
		}
	}
	err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Info("failed to delete pod", "pod", pod.Namespace+"/"+pod.Name, "why", why, "err", err)
		return
	}
	c.log.Info("force deleted pod", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName, "why", why)
}
