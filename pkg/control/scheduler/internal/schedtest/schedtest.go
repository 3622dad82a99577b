// Package schedtest builds nodes, pods and snapshots for the plugins' table tests.
package schedtest

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/scheduler/cache"
	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// Node is a Ready node with 4 CPUs, 8Gi and 110 pods, and the given labels.
func Node(name string, labels map[string]string) *corev1.Node {
	l := map[string]string{corev1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

var uid int

// Pod is a pod in namespace "default" with labels and one container requesting cpu
// (millicores, 0: none).
func Pod(name string, labels map[string]string, milliCPU int64) *corev1.Pod {
	uid++
	c := corev1.Container{Name: "c", Image: "img"}
	if milliCPU > 0 {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels, UID: types.UID(fmt.Sprint("uid-", uid))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// On places pod on node.
func On(pod *corev1.Pod, node string) *corev1.Pod {
	pod.Spec.NodeName = node
	return pod
}

// Cache is a scheduler cache holding nodes and placed pods.
func Cache(nodes []*corev1.Node, pods ...*corev1.Pod) *cache.Cache {
	c := cache.New()
	for _, n := range nodes {
		c.AddNode(n)
	}
	for _, p := range pods {
		c.AddPod(p)
	}
	return c
}

// Snapshot is the cluster of nodes and placed pods as a scheduling cycle sees it.
func Snapshot(nodes []*corev1.Node, pods ...*corev1.Pod) *cache.Snapshot {
	s := cache.NewSnapshot()
	Cache(nodes, pods...).UpdateSnapshot(s)
	return s
}

// Handle serves a snapshot and a fake clientset's informers (objects listed in them).
type Handle struct {
	Snap    *cache.Snapshot
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	fwk     *framework.Framework
}

// NewHandle makes a Handle whose informers hold objs and whose clientset holds the
// snapshot's pods (what preemption patches and deletes).
func NewHandle(snap *cache.Snapshot, objs ...any) *Handle {
	client := fake.NewClientset()
	for _, n := range snap.List() {
		for _, pi := range n.Pods {
			_ = client.Tracker().Add(pi.Pod)
		}
	}
	f := informers.NewSharedInformerFactory(client, 0)
	h := &Handle{Snap: snap, client: client, factory: f}
	core := f.Core().V1()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			_ = core.Namespaces().Informer().GetStore().Add(o)
		case *corev1.PersistentVolumeClaim:
			_ = core.PersistentVolumeClaims().Informer().GetStore().Add(o)
		case *corev1.PersistentVolume:
			_ = core.PersistentVolumes().Informer().GetStore().Add(o)
		case *appsv1.ReplicaSet:
			_ = f.Apps().V1().ReplicaSets().Informer().GetStore().Add(o)
		case *storagev1.StorageClass:
			_ = f.Storage().V1().StorageClasses().Informer().GetStore().Add(o)
		}
	}
	return h
}

func (h *Handle) Client() kubernetes.Interface               { return h.client }
func (h *Handle) Informers() informers.SharedInformerFactory { return h.factory }
func (h *Handle) Nodes() framework.NodeLister                { return h.Snap }

// SetFramework names the profile RunFilters runs.
func (h *Handle) SetFramework(f *framework.Framework) { h.fwk = f }

func (h *Handle) RunFilters(ctx context.Context, pod *framework.PodInfo, nodes framework.NodeLister, node *framework.NodeInfo) *framework.Status {
	return h.fwk.RunFilters(ctx, pod, nodes, node)
}

// Filter runs a plugin's PreFilter (if any) and Filter for pod on every node of the
// snapshot and returns each node's reasons ("" when it fits).
func Filter(p framework.Plugin, snap *cache.Snapshot, pod *corev1.Pod) map[string]string {
	fwk := &framework.Framework{Parallelism: 1}
	if pf, ok := p.(framework.PreFilterPlugin); ok {
		fwk.PreFilters = append(fwk.PreFilters, pf)
	}
	if f, ok := p.(framework.FilterPlugin); ok {
		fwk.Filters = append(fwk.Filters, f)
	}
	pi := framework.NewPodInfo(pod)
	out := map[string]string{}
	state := framework.NewCycleState()
	if s := fwk.RunPreFilter(context.Background(), state, pi, snap); !s.IsSuccess() {
		for _, n := range snap.List() {
			out[n.Node().Name] = "prefilter: " + s.Message()
		}
		return out
	}
	for _, n := range snap.List() {
		out[n.Node().Name] = fwk.RunFilter(context.Background(), state, pi, n).Message()
	}
	return out
}

// Score runs a plugin's PreScore, Score and NormalizeScore over every node of the snapshot.
func Score(p framework.Plugin, snap *cache.Snapshot, pod *corev1.Pod) map[string]int64 {
	fwk := &framework.Framework{Parallelism: 1, Scores: []framework.WeightedScore{{ScorePlugin: p.(framework.ScorePlugin), Weight: 1}}}
	if ps, ok := p.(framework.PreScorePlugin); ok {
		fwk.PreScores = append(fwk.PreScores, ps)
	}
	scores, s := fwk.RunScore(context.Background(), framework.NewCycleState(), framework.NewPodInfo(pod), snap.List())
	if !s.IsSuccess() {
		panic(s.Message())
	}
	out := map[string]int64{}
	for _, sc := range scores {
		out[sc.Name] = sc.Score
	}
	return out
}
