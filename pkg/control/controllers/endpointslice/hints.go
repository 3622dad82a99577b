package endpointslice

import (
	"github.com/minik8s/minik8s/internal/controller/nodeready"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/endpointslice/topologycache"
	"k8s.io/endpointslice/trafficdist"
	"k8s.io/klog/v2"
)

// topologyKey is the queue item that has the topology cache read the Nodes again: it is
// no Service's key.
const topologyKey = ""

// hints sets the topology hints of the slices a sync writes, as kube's reconciler
// (k8s.io/endpointslice reconcileByAddressType): with the topology-mode annotation Auto,
// the topology cache shares the ready endpoints among the zones by their nodes' CPU;
// otherwise trafficDistribution hints each ready endpoint for its own zone (and node, with
// PreferSameNode), and without either the hints go. An unchanged slice whose hints are
// wrong moves to the updates. It returns the Events to record on svc.
func (c *Controller) hints(svc *corev1.Service, si *topologycache.SliceInfo) (create, update []*discoveryv1.EndpointSlice, events []*topologycache.EventBuilder) {
	logger := klog.Background().WithValues("controller", "endpointslice")
	auto := topologyModeAuto(svc.Annotations)
	distribution := svc.Spec.TrafficDistribution != nil && !auto
	if auto {
		// Read the Nodes now, not only when they change: a Service synced before the
		// first Node event would otherwise find no zones and go without hints until its
		// endpoints change.
		c.setNodes(logger)
		create, update, events = c.topology.AddHints(logger, si)
	} else {
		if c.topology.HasPopulatedHints(si.ServiceKey) {
			events = append(events, &topologycache.EventBuilder{EventType: corev1.EventTypeWarning, Reason: "TopologyAwareHintsDisabled",
				Message: topologycache.FormatWithAddressType(topologycache.TopologyAwareHintsDisabled, si.AddressType)})
		}
		c.topology.RemoveHints(si.ServiceKey, si.AddressType)
		create, update = si.ToCreate, si.ToUpdate
		if !distribution {
			create, update = topologycache.RemoveHintsFromSlices(si)
		}
	}
	if distribution {
		create, update, _ = trafficdist.ReconcileHints(svc.Spec.TrafficDistribution, create, update, si.Unchanged)
	}
	return create, update, events
}

// topologyModeAuto: the Service asks for Topology Aware Routing, by
// service.kubernetes.io/topology-mode or the older topology-aware-hints annotation (which
// wins when both are set), "Auto" or "auto".
func topologyModeAuto(annotations map[string]string) bool {
	v, ok := annotations[corev1.DeprecatedAnnotationTopologyAwareHints]
	if !ok {
		v = annotations[corev1.AnnotationTopologyMode]
	}
	return v == "Auto" || v == "auto"
}

// setNodes has the topology cache count the CPU of the ready Nodes by zone.
func (c *Controller) setNodes(logger klog.Logger) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Error listing Nodes")
		return
	}
	c.topology.SetNodes(logger, nodes)
}

// checkNodeTopology reads the Nodes again after one changed and requeues the Services
// whose hints now overload a zone, as kube's checkNodeTopologyDistribution.
func (c *Controller) checkNodeTopology() {
	c.setNodes(klog.Background().WithValues("controller", "endpointslice"))
	for _, key := range c.topology.GetOverloadedServices() {
		c.Queue.Add(key)
	}
}

// onNodeUpdate queues a topology check when a Node's readiness or zone changed (kube's
// updateNode: a zone label may come after the Node).
func (c *Controller) onNodeUpdate(old, cur any) {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 || nodeready.Ready(o) != nodeready.Ready(n) || o.Labels[corev1.LabelTopologyZone] != n.Labels[corev1.LabelTopologyZone] {
		c.Queue.Add(topologyKey)
	}
}
