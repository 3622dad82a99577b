package framework

import (
	"context"
	"iter"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// MaxNodeScore is the top of the normalized score range.
const MaxNodeScore int64 = 100

// CycleState carries what PreFilter and PreScore computed to Filter and Score for one pod's
// scheduling cycle; written before the parallel phases and read during them.
type CycleState struct {
	mu   sync.RWMutex
	data map[string]any
	// SkipFilter and SkipScore name the plugins that answered Skip.
	SkipFilter, SkipScore map[string]bool
	// filters are the Filter plugins left after PreFilter (no per-node map lookups).
	filters []FilterPlugin
}

// NewCycleState makes an empty CycleState.
func NewCycleState() *CycleState {
	return &CycleState{data: map[string]any{}, SkipFilter: map[string]bool{}, SkipScore: map[string]bool{}}
}

// Read returns what a plugin wrote under key.
func (c *CycleState) Read(key string) (any, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.data[key]
	return v, ok
}

// ReadAs is what a plugin wrote under key as its own type T, and whether it is one: the
// getPreFilterState of each kube-scheduler plugin, written once.
func ReadAs[T any](c *CycleState, key string) (T, bool) {
	v, _ := c.Read(key)
	t, ok := v.(T)
	return t, ok
}

// Write stores a value under key.
func (c *CycleState) Write(key string, v any) {
	c.mu.Lock()
	c.data[key] = v
	c.mu.Unlock()
}

// NodeLister lists the nodes of the snapshot a cycle runs against.
type NodeLister interface {
	List() []*NodeInfo
	Get(name string) *NodeInfo
	// HavePodsWithAffinity lists nodes with a pod that has pod (anti-)affinity;
	// HavePodsWithRequiredAntiAffinity those with a pod that has required anti-affinity.
	HavePodsWithAffinity() []*NodeInfo
	HavePodsWithRequiredAntiAffinity() []*NodeInfo
	// ImageNodes counts the nodes that hold an image (by any of its names).
	ImageNodes(image string) int
	// PodsMatching yields the placed pods that term selects, each with its node
	// (nsLabels gives a namespace's labels for a namespaceSelector).
	PodsMatching(term *AffinityTerm, nsLabels func(namespace string) labels.Set) iter.Seq2[*PodInfo, *NodeInfo]
	// RequiredAntiAffinityTermsFor yields the placed pods' required anti-affinity terms
	// that may select pod (by namespace and label; callers still match): one term for all
	// of the same Signature, with the nodes of the pods that have it (once per pod).
	RequiredAntiAffinityTermsFor(pod *corev1.Pod) iter.Seq2[*AffinityTerm, iter.Seq[*NodeInfo]]
}

// Handle is what plugins get at construction.
type Handle interface {
	Client() kubernetes.Interface
	Informers() informers.SharedInformerFactory
	// Nodes is the snapshot of the current cycle.
	Nodes() NodeLister
	// RunFilters runs the profile's PreFilter and Filter plugins for pod on node, against
	// nodes (a snapshot in which node may differ from the cache: preemption's what-if).
	RunFilters(ctx context.Context, pod *PodInfo, nodes NodeLister, node *NodeInfo) *Status
}

// Plugin is any plugin.
type Plugin interface{ Name() string }

// PreFilterPlugin computes per-pod state once per cycle (Skip: nothing to filter).
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *PodInfo, nodes NodeLister) *Status
}

// FilterPlugin says whether the pod fits a node.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status
}

// NodeStatuses holds each rejected node's status.
type NodeStatuses map[string]*Status

// PostFilterPlugin runs when no node fits (preemption); it may nominate a node.
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *PodInfo, statuses NodeStatuses) (nominated string, status *Status)
}

// PreScorePlugin computes per-pod scoring state over the feasible nodes (Skip: no score).
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo) *Status
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// ScorePlugin ranks a feasible node.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) (int64, *Status)
}

// ScoreNormalizer brings a plugin's raw scores into 0..MaxNodeScore.
type ScoreNormalizer interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *PodInfo, scores []NodeScore) *Status
}

// ReservePlugin holds resources of its own for the chosen node until binding ends.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *PodInfo, node string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *PodInfo, node string)
}

// PreBindPlugin prepares what binding needs in the API (VolumeBinding: claims bound on the
// chosen node) before the pod is bound.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *PodInfo, node string) *Status
}

// BindPlugin binds the pod to the node in the API.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *corev1.Pod, node string) *Status
}

// ActionType is a kind of cluster change, as kube-scheduler's ClusterEvent actions.
type ActionType uint32

const (
	Add ActionType = 1 << iota
	Delete
	UpdateNodeAllocatable
	UpdateNodeLabel
	UpdateNodeTaint
	UpdateNodeCondition
	UpdateNodeDeclaredFeature
	UpdatePodLabel
	UpdatePodScaleDown
	Update // any other update
	All    = Add | Delete | UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition | UpdateNodeDeclaredFeature | UpdatePodLabel | UpdatePodScaleDown | Update
)

// Resource kinds events are about.
const (
	KindNode                  = "Node"
	KindPod                   = "Pod" // a pod placed on a node
	KindPersistentVolumeClaim = "PersistentVolumeClaim"
	KindPersistentVolume      = "PersistentVolume"
)

// ClusterEvent is a change that may make a pod schedulable.
type ClusterEvent struct {
	Kind   string
	Action ActionType
}

// Matches says whether an event registered as r covers e.
func (r ClusterEvent) Matches(e ClusterEvent) bool {
	return r.Kind == e.Kind && r.Action&e.Action != 0
}

// EnqueueExtensions lists the events after which a pod this plugin rejected may fit.
type EnqueueExtensions interface {
	EventsToRegister() []ClusterEvent
}
