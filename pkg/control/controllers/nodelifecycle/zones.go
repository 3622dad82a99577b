package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	nodetopology "k8s.io/component-helpers/node/topology"
	nodeutil "k8s.io/component-helpers/node/util"
)

// kube-controller-manager's defaults of the flags that pace NoExecute tainting.
const (
	evictionRate           = 0.1  // --node-eviction-rate: nodes tainted a second, per zone
	secondaryEvictionRate  = 0.01 // --secondary-node-eviction-rate: in a disrupted large zone
	unhealthyZoneThreshold = 0.55 // --unhealthy-zone-threshold: the share of not-Ready nodes
	largeClusterThreshold  = 50   // --large-cluster-size-threshold: nodes in a zone
)

// zoneState is the health of a failure zone, as kube's node lifecycle controller judges it.
type zoneState int

const (
	zoneNormal zoneState = iota
	zonePartialDisruption
	zoneFullDisruption
)

// zone paces the not-ready and unreachable NoExecute taints put on a zone's nodes: one every
// 10 s (burst 1) normally, none in a partially disrupted small zone.
type zone struct {
	state   zoneState
	rate    float32
	limiter flowcontrol.RateLimiter
}

// zoneStateOf is kube's ComputeZoneState: fully disrupted when no node is Ready, partially
// when more than two and at least 55% of them are not.
func zoneStateOf(ready, notReady int) zoneState {
	switch {
	case ready == 0 && notReady > 0:
		return zoneFullDisruption
	case notReady > 2 && float64(notReady)/float64(ready+notReady) >= unhealthyZoneThreshold:
		return zonePartialDisruption
	default:
		return zoneNormal
	}
}

// setRate swaps the zone's limiter for one of the new rate, as kube's SwapLimiter: a rate of
// 0 taints nothing; a limiter that had no token left leaves the new one without its own.
func (z *zone) setRate(qps float32, clk flowcontrol.Clock) {
	if z.limiter != nil && z.rate == qps {
		return
	}
	var next flowcontrol.RateLimiter
	if qps <= 0 {
		next = flowcontrol.NewFakeNeverRateLimiter()
	} else {
		next = flowcontrol.NewTokenBucketRateLimiterWithClock(qps, 1, clk)
		if z.limiter != nil && !z.limiter.TryAccept() {
			next.TryAccept()
		}
	}
	if z.limiter != nil {
		z.limiter.Stop()
	}
	z.rate, z.limiter = qps, next
}

// judgeZones is kube's handleDisruption, run before each round: it sets each zone's state and
// tainting rate. When every zone is fully disrupted (no node Ready anywhere) the fault is
// more likely the control plane's view than every node at once, so the controller enters
// "master disruption mode": it takes the not-ready and unreachable NoExecute taints off every
// node and puts none until a node is Ready again; leaving it, every node gets a fresh grace
// period.
func (c *Controller) judgeZones(nodes []*corev1.Node, now time.Time) {
	counts := map[string][2]int{} // ready, not ready
	for _, n := range nodes {
		k := nodetopology.GetZoneKey(n)
		cnt := counts[k]
		if _, ready := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady); ready != nil && ready.Status == corev1.ConditionTrue {
			cnt[0]++
		} else {
			cnt[1]++
		}
		counts[k] = cnt
	}
	allDisrupted := len(counts) > 0
	for k, cnt := range counts {
		z := c.zones[k]
		if z == nil {
			z = &zone{}
			c.zones[k] = z
		}
		z.state = zoneStateOf(cnt[0], cnt[1])
		allDisrupted = allDisrupted && z.state == zoneFullDisruption
		switch {
		case z.state != zonePartialDisruption:
			z.setRate(evictionRate, c.clock)
		case cnt[0]+cnt[1] > largeClusterThreshold:
			z.setRate(secondaryEvictionRate, c.clock)
		default:
			z.setRate(0, c.clock)
		}
	}
	for k := range c.zones {
		if _, ok := counts[k]; !ok {
			delete(c.zones, k)
		}
	}
	switch {
	case allDisrupted && !c.allDisrupted:
		c.log.Info("Controller detected that all Nodes are not-Ready. Entering master disruption mode")
	case !allDisrupted && c.allDisrupted:
		c.log.Info("Controller detected that some Nodes are Ready. Exiting master disruption mode")
		for _, h := range c.health {
			h.probe = now
		}
	}
	c.allDisrupted = allDisrupted
}

// mayTaintNoExecute says whether a not-ready or unreachable NoExecute taint may be put on the
// node now, taking one of its zone's tokens when it may.
func (c *Controller) mayTaintNoExecute(n *corev1.Node) bool {
	if c.allDisrupted {
		return false
	}
	z := c.zones[nodetopology.GetZoneKey(n)]
	return z != nil && z.limiter.TryAccept()
}
