// Package nodeipam gives every Node a pod CIDR of its own from --cluster-cidr, as
// kube-controller-manager's node IPAM controller (range allocator) does: subnets of
// --node-cidr-mask-size bits, never overlapping, the taken ones read back from the Nodes
// at start so restarts keep them, and none overlapping --service-cluster-ip-range. A node
// that already has one keeps it, a node being deleted gets none; an exhausted range gives
// the node a CIDRNotAvailable Event, and a pod CIDR that cannot be written a
// CIDRAssignmentFailed one. minilet started without --pod-cidr waits for it.
package nodeipam

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"net/netip"
	"time"

	"github.com/minik8s/minik8s/internal/controller/allocated"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	nodeutil "k8s.io/component-helpers/node/util"
)

// EventSource is the source of its Events, as kube-controller-manager's range allocator's.
const EventSource = "cidrAllocator"

// cidrUpdateRetries is how many times a node's pod CIDR is written before giving up, kube's.
const cidrUpdateRetries = 3

// Ranges are the cluster CIDR cut into node subnets.
type Ranges struct {
	cluster netip.Prefix
	bits    int
	// services is --service-cluster-ip-range: no node gets a subnet overlapping it.
	services netip.Prefix
}

// WithoutServices keeps the subnets that overlap the Services' cluster IP range from
// nodes, as kube's range allocator (filterOutServiceRange) does when the two overlap:
// pods there would take addresses Services answer on.
func (r Ranges) WithoutServices(serviceCIDR netip.Prefix) Ranges {
	r.services = serviceCIDR.Masked()
	return r
}

// ParseRanges reads --cluster-cidr and --node-cidr-mask-size.
func ParseRanges(clusterCIDR string, maskSize int) (Ranges, error) {
	p, err := netip.ParsePrefix(clusterCIDR)
	if err != nil || !p.Addr().Is4() {
		return Ranges{}, fmt.Errorf("--cluster-cidr %q is not an IPv4 CIDR", clusterCIDR)
	}
	if maskSize < p.Bits() || maskSize > 30 {
		return Ranges{}, fmt.Errorf("--node-cidr-mask-size %d must be between the cluster CIDR's /%d and 30", maskSize, p.Bits())
	}
	return Ranges{cluster: p.Masked(), bits: maskSize}, nil
}

// subnet is the i-th node subnet, if there is one.
func (r Ranges) subnet(i int) (netip.Prefix, bool) {
	count := 1 << (r.bits - r.cluster.Bits())
	if i < 0 || i >= count {
		return netip.Prefix{}, false
	}
	base := new(big.Int).SetBytes(r.cluster.Addr().AsSlice())
	base.Add(base, new(big.Int).Lsh(big.NewInt(int64(i)), uint(32-r.bits)))
	b := make([]byte, 4)
	base.FillBytes(b)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte(b)), r.bits), true
}

// Controller is the node IPAM controller.
type Controller struct {
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	ranges   Ranges
	log      *slog.Logger
	used     allocated.Owners[netip.Prefix] // subnet -> node
}

// New wires the controller to the shared Node informer.
func New(client kubernetes.Interface, nodes coreinformers.NodeInformer, ranges Ranges, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, nodes: nodes.Lister(), synced: nodes.Informer().HasSynced, ranges: ranges, recorder: recorder, log: log,
		queue: workloop.NewQueue[string]("nodeipam")}
	_, err := nodes.Informer().AddEventHandler(workloop.OnEvery(workloop.Enqueue(c.queue)))
	return c, err
}

// Run works the queue with one worker until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkersFrom(ctx, 1, c.queue, c.log, c.loadUsed, c.sync, c.synced)
}

// loadUsed reads the subnets already handed out from the Nodes (so they survive restarts).
func (c *Controller) loadUsed() {
	c.used = allocated.Owners[netip.Prefix]{}
	nodes, _ := c.nodes.List(labels.Everything())
	for _, n := range nodes {
		if p, err := netip.ParsePrefix(n.Spec.PodCIDR); err == nil {
			c.used[p.Masked()] = n.Name
		}
	}
}

func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.used.Release(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if node.DeletionTimestamp != nil {
		return 0, nil // as kube's syncNode: a node on its way out gets nothing
	}
	if node.Spec.PodCIDR != "" {
		if p, err := netip.ParsePrefix(node.Spec.PodCIDR); err == nil {
			c.used[p.Masked()] = name // set by minilet's --pod-cidr, or by us earlier
		}
		return 0, nil
	}
	var free netip.Prefix
	for i := 0; ; i++ {
		p, ok := c.ranges.subnet(i)
		if !ok {
			c.recorder.Eventf(node, corev1.EventTypeNormal, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", name)
			return 0, fmt.Errorf("no pod CIDR left in %s for node %s", c.ranges.cluster, name)
		}
		if c.used.FreeFor(p, name) && !(c.ranges.services.IsValid() && c.ranges.services.Overlaps(p)) {
			free = p
			break
		}
	}
	// As kube's updateCIDRsAllocation: a patch (no conflict with the node's status writes),
	// tried a few times, then an Event on the node saying it got none.
	for try := 0; try < cidrUpdateRetries; try++ {
		if err = nodeutil.PatchNodeCIDRs(ctx, c.client, types.NodeName(name), []string{free.String()}); err == nil {
			break
		}
	}
	if err != nil {
		c.recorder.Eventf(node, corev1.EventTypeNormal, "CIDRAssignmentFailed", "Node %s status is now: CIDRAssignmentFailed", name)
		return 0, err
	}
	c.used[free] = name
	c.log.Info("assigned a pod CIDR", "node", name, "podCIDR", free)
	return 0, nil
}
