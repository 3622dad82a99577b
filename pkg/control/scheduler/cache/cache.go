// Package cache is the scheduler's view of the cluster: a NodeInfo per node with the pods
// bound to it (from the shared informers) and the pods the scheduler assumed there while
// their binding is in flight, so a scheduling cycle never waits for the API. Snapshots
// copy only the nodes changed since the last one.
package cache

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// item is a node in a list ordered by most recent change, so a snapshot walks only the
// changed head of it.
type item struct {
	info       *framework.NodeInfo
	prev, next *item
}

type podState struct {
	pod     *framework.PodInfo
	node    string
	assumed bool
}

// Cache holds NodeInfos and pod placements.
type Cache struct {
	mu         sync.Mutex
	nodes      map[string]*item
	head       *item
	pods       map[types.UID]*podState
	generation int64
	// layoutChanged: nodes came or went, or a node's zone changed: the snapshot's node
	// order must be rebuilt.
	layoutChanged bool
}

// New makes an empty cache.
func New() *Cache {
	return &Cache{nodes: map[string]*item{}, pods: map[types.UID]*podState{}}
}

// touch marks a node changed: a new generation, moved to the head of the list.
func (c *Cache) touch(it *item) {
	c.generation++
	it.info.Generation = c.generation
	if c.head == it {
		return
	}
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	it.prev, it.next = nil, c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

func (c *Cache) itemFor(name string) *item {
	it, ok := c.nodes[name]
	if !ok {
		it = &item{info: framework.NewNodeInfo()}
		c.nodes[name] = it
	}
	return it
}

func (c *Cache) drop(name string, it *item) {
	if it.prev != nil {
		it.prev.next = it.next
	} else if c.head == it {
		c.head = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	delete(c.nodes, name)
	c.layoutChanged = true
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.itemFor(node.Name)
	if old := it.info.Node(); old == nil || zoneKey(old) != zoneKey(node) {
		c.layoutChanged = true
	}
	it.info.SetNode(node)
	c.touch(it)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(node *corev1.Node) { c.AddNode(node) }

// RemoveNode forgets a node; its pods stay accounted until they go.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.nodes[name]
	if !ok {
		return
	}
	if len(it.info.Pods) == 0 {
		c.drop(name, it)
		c.generation++
		return
	}
	it.info = withoutNode(it.info)
	c.layoutChanged = true
	c.touch(it)
}

func withoutNode(n *framework.NodeInfo) *framework.NodeInfo {
	empty := framework.NewNodeInfo()
	for _, p := range n.Pods {
		empty.AddPod(p)
	}
	return empty
}

// AssumePod places a pod on a node before its binding is confirmed.
func (c *Cache) AssumePod(pi *framework.PodInfo, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pi.Pod.UID]; ok {
		return fmt.Errorf("pod %s/%s is already in the scheduler's cache", pi.Pod.Namespace, pi.Pod.Name)
	}
	c.place(pi, node)
	c.pods[pi.Pod.UID] = &podState{pod: pi, node: node, assumed: true}
	return nil
}

// ForgetPod undoes AssumePod after a failed binding.
func (c *Cache) ForgetPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.pods[pod.UID]; ok && st.assumed {
		c.unplace(st)
		delete(c.pods, pod.UID)
	}
}

// IsAssumed says whether the pod is assumed and not yet seen bound.
func (c *Cache) IsAssumed(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.pods[uid]
	return ok && st.assumed
}

// AddPod accounts a pod the informer shows bound; it confirms an assumed pod.
func (c *Cache) AddPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.pods[pod.UID]; ok {
		c.unplace(st)
	}
	pi := framework.NewPodInfo(pod)
	c.place(pi, pod.Spec.NodeName)
	c.pods[pod.UID] = &podState{pod: pi, node: pod.Spec.NodeName}
}

// UpdatePod replaces a bound pod (its labels or requests may have changed) and says
// whether its requests shrank (an in-place resize down frees room).
func (c *Cache) UpdatePod(pod *corev1.Pod) (shrank bool) {
	c.mu.Lock()
	var old *framework.Resource
	if st, ok := c.pods[pod.UID]; ok {
		old = st.pod.Requests
	}
	c.mu.Unlock()
	c.AddPod(pod)
	if old == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.pods[pod.UID].pod.Requests
	return cur.MilliCPU < old.MilliCPU || cur.Memory < old.Memory || cur.EphemeralStorage < old.EphemeralStorage
}

// RemovePod forgets a pod that was deleted or finished.
func (c *Cache) RemovePod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.pods[pod.UID]; ok {
		c.unplace(st)
		delete(c.pods, pod.UID)
	}
}

func (c *Cache) place(pi *framework.PodInfo, node string) {
	it := c.itemFor(node)
	it.info.AddPod(pi)
	c.touch(it)
}

func (c *Cache) unplace(st *podState) {
	it, ok := c.nodes[st.node]
	if !ok {
		return
	}
	it.info.RemovePod(st.pod.Pod)
	if it.info.Node() == nil && len(it.info.Pods) == 0 {
		c.drop(st.node, it)
		c.generation++
		return
	}
	c.touch(it)
}

// UpdateSnapshot brings s up to date, copying only the nodes changed since its last update.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	affinityChanged := false
	for it := c.head; it != nil && it.info.Generation > s.generation; it = it.next {
		node := it.info.Node()
		if node == nil {
			continue
		}
		clone := it.info.Clone()
		if cur, ok := s.infos[node.Name]; ok {
			hadAffinity, hadAnti := len(cur.PodsWithAffinity) > 0, len(cur.PodsWithRequiredAntiAffinity) > 0
			s.countImages(cur.ImageSizes, -1)
			s.countImages(clone.ImageSizes, 1)
			oldPods, index := cur.Pods, cur.Index
			*cur = *clone
			cur.Index = index
			s.index.update(cur, oldPods)
			// The node joins or leaves the lists of nodes with affinity pods in place
			// (their order does not matter), rather than all nodes being walked again.
			s.withAffinity = setMember(s.withAffinity, cur, hadAffinity, len(cur.PodsWithAffinity) > 0)
			s.withRequiredAnti = setMember(s.withRequiredAnti, cur, hadAnti, len(cur.PodsWithRequiredAntiAffinity) > 0)
		} else {
			s.countImages(clone.ImageSizes, 1)
			s.index.addNode(clone)
			s.infos[node.Name] = clone
			c.layoutChanged = true
			affinityChanged = true
		}
	}
	if c.layoutChanged {
		for name := range s.infos {
			if it, ok := c.nodes[name]; !ok || it.info.Node() == nil {
				s.countImages(s.infos[name].ImageSizes, -1)
				s.index.removeNode(s.infos[name])
				delete(s.infos, name)
			}
		}
		s.list = interleaveZones(s.infos)
		c.layoutChanged = false
		affinityChanged = true
	}
	if affinityChanged {
		s.withAffinity, s.withRequiredAnti = s.withAffinity[:0], s.withRequiredAnti[:0]
		for _, n := range s.list {
			if len(n.PodsWithAffinity) > 0 {
				s.withAffinity = append(s.withAffinity, n)
			}
			if len(n.PodsWithRequiredAntiAffinity) > 0 {
				s.withRequiredAnti = append(s.withRequiredAnti, n)
			}
		}
	}
	s.generation = c.generation
}

// setMember adds n to list or takes it out when its membership changed from was to now.
func setMember(list []*framework.NodeInfo, n *framework.NodeInfo, was, now bool) []*framework.NodeInfo {
	switch {
	case now && !was:
		return append(list, n)
	case was && !now:
		if i := slices.Index(list, n); i >= 0 {
			list[i] = list[len(list)-1]
			return list[:len(list)-1]
		}
	}
	return list
}

func zoneKey(n *corev1.Node) string {
	return n.Labels[corev1.LabelTopologyRegion] + ":\x00:" + n.Labels[corev1.LabelTopologyZone]
}

// interleaveZones orders nodes one zone after another (as kube-scheduler's node tree), so
// a cycle that stops after a share of the nodes still sees every zone, and numbers them
// (NodeInfo.Index) in that order.
func interleaveZones(infos map[string]*framework.NodeInfo) []*framework.NodeInfo {
	byZone := map[string][]*framework.NodeInfo{}
	for _, n := range infos {
		z := zoneKey(n.Node())
		byZone[z] = append(byZone[z], n)
	}
	zones := make([]string, 0, len(byZone))
	for z, nodes := range byZone {
		zones = append(zones, z)
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].Node().Name < nodes[j].Node().Name })
	}
	sort.Strings(zones)
	out := make([]*framework.NodeInfo, 0, len(infos))
	for i := 0; len(out) < len(infos); i++ {
		for _, z := range zones {
			if i < len(byZone[z]) {
				byZone[z][i].Index = len(out)
				out = append(out, byZone[z][i])
			}
		}
	}
	return out
}

// Snapshot is the cluster as one scheduling cycle sees it.
type Snapshot struct {
	infos                                map[string]*framework.NodeInfo
	list, withAffinity, withRequiredAnti []*framework.NodeInfo
	generation                           int64
	images                               map[string]int
	index                                *podIndex
}

// NewSnapshot makes an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{infos: map[string]*framework.NodeInfo{}, images: map[string]int{}, index: newPodIndex()}
}

func (s *Snapshot) countImages(sizes map[string]int64, sign int) {
	for name := range sizes {
		s.images[name] += sign
		if s.images[name] <= 0 {
			delete(s.images, name)
		}
	}
}

// ImageNodes counts the nodes holding an image.
func (s *Snapshot) ImageNodes(image string) int { return s.images[image] }

// List is every node, zones interleaved.
func (s *Snapshot) List() []*framework.NodeInfo { return s.list }

// Get is one node (nil when unknown).
func (s *Snapshot) Get(name string) *framework.NodeInfo { return s.infos[name] }

// HavePodsWithAffinity lists nodes holding a pod with pod (anti-)affinity.
func (s *Snapshot) HavePodsWithAffinity() []*framework.NodeInfo { return s.withAffinity }

// HavePodsWithRequiredAntiAffinity lists nodes holding a pod with required anti-affinity.
func (s *Snapshot) HavePodsWithRequiredAntiAffinity() []*framework.NodeInfo {
	return s.withRequiredAnti
}
