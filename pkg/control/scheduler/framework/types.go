package framework

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resource is an amount of each resource the scheduler accounts, in integers.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	AllowedPodNumber int64
	// Scalar holds extended resources (and hugepages), by name.
	Scalar map[corev1.ResourceName]int64
}

// NewResource reads a ResourceList.
func NewResource(rl corev1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds a ResourceList.
func (r *Resource) Add(rl corev1.ResourceList) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case corev1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if r.Scalar == nil {
				r.Scalar = map[corev1.ResourceName]int64{}
			}
			r.Scalar[name] += q.Value()
		}
	}
}

// Get reads one resource by name.
func (r *Resource) Get(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return r.MilliCPU
	case corev1.ResourceMemory:
		return r.Memory
	case corev1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case corev1.ResourcePods:
		return r.AllowedPodNumber
	}
	return r.Scalar[name]
}

func (r *Resource) addScaled(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += sign * o.AllowedPodNumber
	for name, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[corev1.ResourceName]int64{}
		}
		r.Scalar[name] += sign * v
	}
}

// Clone copies r.
func (r *Resource) Clone() *Resource {
	c := *r
	if r.Scalar != nil {
		c.Scalar = make(map[corev1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return &c
}

// Defaults kube-scheduler assumes, for scoring only, for a container that requests nothing,
// so that empty pods still spread (its DefaultMilliCPURequest and DefaultMemoryRequest).
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// AffinityTerm is a pod (anti-)affinity term with its selectors parsed.
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector // nil when the term has none
	// namespace is the one namespace when Namespaces holds exactly one (the usual case: the
	// pod's own), compared without hashing; "" otherwise.
	namespace string
	// indexKey and indexValues are one of the selector's "in" (or "=") requirements: every
	// pod the term selects carries indexKey with one of indexValues, so an index of placed
	// pods by label narrows the pods to match. indexKey "": the selector has none.
	indexKey    string
	indexValues []string
	// indexExact: that requirement is the whole selector and there is no namespaceSelector,
	// so a pod in one of Namespaces with the label is selected without matching.
	indexExact bool
	// signature is the same string for terms that select the same pods in the same
	// topology (a Deployment's replicas' terms), so an index can match them once.
	signature string
}

// Signature is equal for terms with the same namespaces, selectors and topology key.
func (t *AffinityTerm) Signature() string { return t.signature }

// IndexLabel is a label every pod the term selects carries, with one of the values; key ""
// when the selector requires no such label. exact: a pod of one of the term's Namespaces
// with that label is selected.
func (t *AffinityTerm) IndexLabel() (key string, values []string, exact bool) {
	return t.indexKey, t.indexValues, t.indexExact
}

func (t *AffinityTerm) hasNamespace(ns string) bool {
	if t.namespace != "" {
		return ns == t.namespace
	}
	return t.Namespaces.Has(ns)
}

// Matches says whether pod (with its namespace's labels) is selected by the term.
func (t *AffinityTerm) Matches(pod *corev1.Pod, nsLabels labels.Set) bool {
	if t.hasNamespace(pod.Namespace) || (t.NamespaceSelector != nil && t.NamespaceSelector.Matches(nsLabels)) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// PodInfo is a pod with what the scheduler reads from it computed once.
type PodInfo struct {
	Pod *corev1.Pod
	// Requests follow the kubelet's rules (component-helpers): the largest init container,
	// sidecars (restartable init containers) added, pod overhead added.
	Requests *Resource
	// NonZeroCPU and NonZeroMem count containers without requests at the defaults above.
	NonZeroCPU, NonZeroMem int64

	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// ParseError is set when an affinity term's selector is invalid.
	ParseError error
}

// NewPodInfo computes a PodInfo.
func NewPodInfo(pod *corev1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	pi.Requests = NewResource(reqs)
	nonZero := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.BinarySI),
		}})
	pi.NonZeroCPU = nonZero.Cpu().MilliValue()
	pi.NonZeroMem = nonZero.Memory().Value()
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			pi.RequiredAffinityTerms = pi.terms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAffinityTerms = pi.weightedTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			pi.RequiredAntiAffinityTerms = pi.terms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAntiAffinityTerms = pi.weightedTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	return pi
}

func (pi *PodInfo) terms(in []corev1.PodAffinityTerm) []AffinityTerm {
	out := make([]AffinityTerm, 0, len(in))
	for i := range in {
		t, err := NewAffinityTerm(pi.Pod, &in[i])
		if err != nil {
			pi.ParseError = err
			continue
		}
		out = append(out, t)
	}
	return out
}

func (pi *PodInfo) weightedTerms(in []corev1.WeightedPodAffinityTerm) []WeightedAffinityTerm {
	out := make([]WeightedAffinityTerm, 0, len(in))
	for i := range in {
		t, err := NewAffinityTerm(pi.Pod, &in[i].PodAffinityTerm)
		if err != nil {
			pi.ParseError = err
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: in[i].Weight})
	}
	return out
}

// NewAffinityTerm parses a term of pod: with neither namespaces nor namespaceSelector it
// applies to the pod's own namespace; matchLabelKeys and mismatchLabelKeys add the pod's
// own values of those keys to the selector.
func NewAffinityTerm(pod *corev1.Pod, term *corev1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("pod affinity term selector: %w", err)
	}
	for _, key := range term.MatchLabelKeys {
		if v, ok := pod.Labels[key]; ok {
			if r, err := labels.NewRequirement(key, "in", []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, key := range term.MismatchLabelKeys {
		if v, ok := pod.Labels[key]; ok {
			if r, err := labels.NewRequirement(key, "notin", []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	t := AffinityTerm{Namespaces: sets.New(term.Namespaces...), Selector: sel, TopologyKey: term.TopologyKey}
	if term.NamespaceSelector != nil {
		if t.NamespaceSelector, err = metav1.LabelSelectorAsSelector(term.NamespaceSelector); err != nil {
			return AffinityTerm{}, fmt.Errorf("pod affinity term namespaceSelector: %w", err)
		}
	} else if len(term.Namespaces) == 0 {
		t.Namespaces.Insert(pod.Namespace)
	}
	if len(t.Namespaces) == 1 {
		t.namespace = t.Namespaces.UnsortedList()[0]
	}
	nsSel := "none"
	if t.NamespaceSelector != nil {
		nsSel = "selector " + t.NamespaceSelector.String()
	}
	t.signature = strings.Join([]string{t.TopologyKey, strings.Join(sets.List(t.Namespaces), ","), sel.String(), nsSel}, "\x00")
	if reqs, selectable := sel.Requirements(); selectable {
		for _, r := range reqs {
			if op := r.Operator(); op == selection.In || op == selection.Equals || op == selection.DoubleEquals {
				t.indexKey, t.indexValues = r.Key(), r.Values().UnsortedList()
				t.indexExact = len(reqs) == 1 && t.NamespaceSelector == nil
				break
			}
		}
	}
	return t, nil
}

// NodeInfo is a node with the pods placed on it (bound or assumed) and their sums.
// What every cycle's filters and scores read of each of hundreds of nodes comes first and
// is held in the NodeInfo itself, not behind pointers: at 5000 nodes a cycle's cost was
// mostly cache misses, one per object a plugin followed (the Node for its spec, the
// requested and allocatable sums).
type NodeInfo struct {
	Requested              Resource
	Allocatable            Resource
	NonZeroCPU, NonZeroMem int64
	Pods                   []*PodInfo
	// Name, Unschedulable and Taints are the node's name, spec.unschedulable and spec.taints.
	Name          string
	Unschedulable bool
	Taints        []corev1.Taint

	node *corev1.Node
	// PodsWithAffinity have any pod affinity or anti-affinity; PodsWithRequiredAntiAffinity
	// have required anti-affinity (the only terms of existing pods a new pod must respect).
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    HostPorts
	// ImageSizes maps every name of every image on the node to its size (nil: none, so
	// that scoring a node without images reads no map).
	ImageSizes map[string]int64
	// Generation grows with every change; the cache's snapshot copies changed nodes only.
	Generation int64
	// Index is the node's position in its snapshot's List, so that what a plugin keeps per
	// node for a cycle (or across cycles) can be a slice read by index instead of a map
	// hashed by name on every node of every cycle. Only the snapshot's nodes have one.
	Index int
}

// NewNodeInfo makes an empty NodeInfo.
func NewNodeInfo() *NodeInfo {
	return &NodeInfo{UsedPorts: HostPorts{}}
}

// Node is the node object (nil when only its pods are known yet).
func (n *NodeInfo) Node() *corev1.Node { return n.node }

// SetNode sets the node object.
func (n *NodeInfo) SetNode(node *corev1.Node) {
	n.node = node
	n.Allocatable = *NewResource(node.Status.Allocatable)
	n.Name, n.Unschedulable, n.Taints = node.Name, node.Spec.Unschedulable, node.Spec.Taints
	n.ImageSizes = nil
	if len(node.Status.Images) > 0 {
		n.ImageSizes = map[string]int64{}
	}
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n.ImageSizes[name] = img.SizeBytes
		}
	}
}

// AddPod accounts a pod on the node.
func (n *NodeInfo) AddPod(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0 {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.Requested.addScaled(pi.Requests, 1)
	n.NonZeroCPU += pi.NonZeroCPU
	n.NonZeroMem += pi.NonZeroMem
	n.UsedPorts.addPod(pi.Pod, 1)
}

// RemovePod takes a pod (by UID) off the node; false when it was not there.
func (n *NodeInfo) RemovePod(pod *corev1.Pod) bool {
	removeFrom := func(list []*PodInfo) []*PodInfo {
		for i, p := range list {
			if p.Pod.UID == pod.UID {
				list[i] = list[len(list)-1]
				return list[:len(list)-1]
			}
		}
		return list
	}
	for i, p := range n.Pods {
		if p.Pod.UID != pod.UID {
			continue
		}
		n.PodsWithAffinity = removeFrom(n.PodsWithAffinity)
		n.PodsWithRequiredAntiAffinity = removeFrom(n.PodsWithRequiredAntiAffinity)
		n.Pods[i] = n.Pods[len(n.Pods)-1]
		n.Pods = n.Pods[:len(n.Pods)-1]
		n.Requested.addScaled(p.Requests, -1)
		n.NonZeroCPU -= p.NonZeroCPU
		n.NonZeroMem -= p.NonZeroMem
		n.UsedPorts.addPod(p.Pod, -1)
		return true
	}
	return false
}

// Clone copies the NodeInfo (pods are shared: they are never modified in place).
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		Requested:                    *n.Requested.Clone(),
		Allocatable:                  n.Allocatable,
		NonZeroCPU:                   n.NonZeroCPU,
		NonZeroMem:                   n.NonZeroMem,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		Name:                         n.Name,
		Unschedulable:                n.Unschedulable,
		Taints:                       n.Taints,
		node:                         n.node,
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		UsedPorts:                    n.UsedPorts.clone(),
		ImageSizes:                   n.ImageSizes,
		Generation:                   n.Generation,
		Index:                        n.Index,
	}
	return c
}

// HostPort is one host port a container asks for.
type HostPort struct {
	IP       string
	Protocol corev1.Protocol
	Port     int32
}

// HostPorts counts the host ports in use on a node.
type HostPorts map[HostPort]int

func (h HostPorts) addPod(pod *corev1.Pod, sign int) {
	for _, hp := range PodHostPorts(pod) {
		h[hp] += sign
		if h[hp] <= 0 {
			delete(h, hp)
		}
	}
}

func (h HostPorts) clone() HostPorts {
	c := make(HostPorts, len(h))
	for k, v := range h {
		c[k] = v
	}
	return c
}

// Conflicts says whether hp clashes with a port in use: same protocol and port, and the
// same IP or either of them the wildcard 0.0.0.0.
func (h HostPorts) Conflicts(hp HostPort) bool {
	if len(h) == 0 {
		return false
	}
	for used := range h {
		if used.Port == hp.Port && used.Protocol == hp.Protocol && (used.IP == hp.IP || used.IP == "0.0.0.0" || hp.IP == "0.0.0.0") {
			return true
		}
	}
	return false
}

// PodHostPorts lists the host ports of a pod's containers (and sidecars), with the
// defaults the API leaves implicit (TCP, 0.0.0.0).
func PodHostPorts(pod *corev1.Pod) []HostPort {
	var out []HostPort
	add := func(cs []corev1.Container) {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := HostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
				if hp.IP == "" {
					hp.IP = "0.0.0.0"
				}
				if hp.Protocol == "" {
					hp.Protocol = corev1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	add(pod.Spec.Containers)
	add(pod.Spec.InitContainers)
	return out
}
