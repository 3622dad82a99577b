package proxy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Topology Aware Routing and trafficDistribution on the proxy's side, as kube-proxy's
// pkg/proxy/topology.go: the endpointslice controller hints each ready endpoint for a zone
// (and a node, PreferSameNode); a node sends its cluster traffic only to the endpoints
// hinted for it, and to every endpoint as soon as one ready endpoint lacks a hint or none
// is hinted for it. The hints are read whatever the Service asks for: the controller
// writes them only when it does. Local traffic policies ignore them.

// hintedEndpoint is an endpoint with its slice's hints, before the topology is applied.
type hintedEndpoint struct {
	Endpoint
	hints *EndpointHints
}

func (e hintedEndpoint) forZone(zone string) bool {
	return e.hints != nil && slices.Contains(e.hints.Zones, zone)
}

func (e hintedEndpoint) forNode(node string) bool {
	return e.hints != nil && slices.Contains(e.hints.Nodes, node)
}

// topologyMode is how the node nodeName in zone reads the hints of eps, as kube-proxy's
// topologyModeFromHints: PreferSameNode when every ready endpoint has a node hint and one
// is for this node; otherwise PreferSameZone when every ready endpoint has a zone hint and
// one is for this zone; otherwise "", every endpoint.
func topologyMode(eps []hintedEndpoint, nodeName, zone string) string {
	ready, allNode, forNode, allZone, forZone := false, true, false, true, false
	for _, e := range eps {
		if !e.Ready {
			continue
		}
		ready = true
		if e.hints == nil || len(e.hints.Nodes) == 0 {
			allNode = false
		} else if e.forNode(nodeName) {
			forNode = true
		}
		if e.hints == nil || len(e.hints.Zones) == 0 {
			allZone = false
		} else if e.forZone(zone) {
			forZone = true
		}
	}
	switch {
	case !ready:
		return ""
	case allNode && forNode:
		return corev1.ServiceTrafficDistributionPreferSameNode
	case allZone && forZone:
		return corev1.ServiceTrafficDistributionPreferSameZone
	}
	return ""
}

// applyTopology is eps as this node's endpoints: those the topology mode leaves out of its
// cluster traffic are marked Elsewhere (kube-proxy's availableForTopology).
func applyTopology(eps []hintedEndpoint, nodeName, zone string) []Endpoint {
	mode := topologyMode(eps, nodeName, zone)
	out := make([]Endpoint, len(eps))
	for i, e := range eps {
		out[i] = e.Endpoint
		switch mode {
		case corev1.ServiceTrafficDistributionPreferSameNode:
			out[i].Elsewhere = !e.forNode(nodeName)
		case corev1.ServiceTrafficDistributionPreferSameZone:
			out[i].Elsewhere = !e.forZone(zone)
		}
	}
	return out
}
