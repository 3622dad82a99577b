package proxy

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Change is one Service's service ports before and after a change: no Before, it is new
// (or newly proxied); no After, it is gone.
type Change struct{ Before, After []ServicePort }

// Mark notes that the Service an informer event is about changed: a Service, an
// EndpointSlice (its Service's; either as an API object or as a record; call it with the old object of an update too, in case its
// service label moved), or a deleted one's tombstone. This is kube-proxy's change
// tracking: the informers say what changed, so a sync need not compare all 10 000.
func (sn *Snapshotter) Mark(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	var k nsName
	var slice string
	switch o := obj.(type) {
	case *corev1.Service:
		k = nsName{o.Namespace, o.Name}
	case *discoveryv1.EndpointSlice:
		k, slice = nsName{o.Namespace, o.Labels[discoveryv1.LabelServiceName]}, o.Name
	case *ServiceRecord:
		k = nsName{o.Namespace, o.Name}
	case *SliceRecord:
		k, slice = nsName{o.Namespace, o.Service}, o.Name
	}
	if k.name == "" {
		return
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.marks == nil {
		sn.marks = map[nsName][]string{}
	}
	sn.marks[k] = append(sn.marks[k], slice) // "" for the Service itself
}

func (sn *Snapshotter) takeMarks() map[nsName][]string {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	m := sn.marks
	sn.marks = nil
	return m
}

// Forget drops the memory of the last snapshot: the next one reads everything anew.
func (sn *Snapshotter) Forget() { sn.last = nil }

// Ready says Changes can be used: a Snapshot was taken, so there is a before, and what
// it knew of this node is still true.
func (sn *Snapshotter) Ready() bool {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	return sn.last != nil && sn.node == sn.nextNode
}

// SetNode says what the service ports read of this node's Node (kube-proxy's
// OnTopologyChange and its NodeManager). A new zone changes which endpoints every
// Service's topology hints leave to this node, a new address which source ranges let the
// node in: Ready says no until a Snapshot has read everything against it. It may be called
// while a sync runs. changed: n differs from the one set before.
func (sn *Snapshotter) SetNode(n NodeFacts) (changed bool) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	changed = n != sn.nextNode
	sn.nextNode = n
	return changed
}

// Changes reads again only the Services marked since the last Snapshot or Changes and
// returns those whose ports may differ (a Service whose object and slices are the very
// ones read last time is left out). Call it after a Snapshot.
func (sn *Snapshotter) Changes() ([]Change, error) {
	if sn.last == nil {
		return nil, fmt.Errorf("changes asked before a snapshot")
	}
	var out []Change
	src := sn.source()
	for k, named := range sn.takeMarks() {
		prev, had := sn.last[k]
		svc, err := src.Service(k.namespace, k.name)
		if err != nil {
			return nil, err
		}
		if svc == nil || !proxied(svc) {
			if had {
				delete(sn.last, k)
				out = append(out, Change{Before: sn.ports(nil, prev)})
			}
			continue
		}
		list, err := slicesOf(src, k, had, prev.slices, named)
		if err != nil {
			return nil, err
		}
		if had && prev.unchanged(svc, list) {
			continue
		}
		var before []ServicePort // what the last snapshot or change gave: the same records, the same ports
		if had {
			before = sn.ports(nil, prev)
		}
		e := snapshotEntry{svc, list}
		sn.last[k] = e
		out = append(out, Change{Before: before, After: sn.ports(nil, e)})
	}
	return out, nil
}

// slicesOf are a Service's EndpointSlices now, sorted by name: of those it had and those
// events named, the ones still labelled for it — no index of all slices by service
// needed. A Service new to the snapshot has no earlier slices to start from, and its
// slices may have come before it: its namespace is read.
func slicesOf(src Source, k nsName, had bool, prev []*SliceRecord, named []string) ([]*SliceRecord, error) {
	if !had {
		list, err := src.ServiceSlices(k.namespace, k.name)
		sortSlices(list)
		return list, err
	}
	names := make(map[string]bool, len(prev)+len(named))
	for _, s := range prev {
		names[s.Name] = true
	}
	for _, n := range named {
		if n != "" {
			names[n] = true
		}
	}
	var list []*SliceRecord
	for n := range names {
		s, err := src.Slice(k.namespace, n)
		if err != nil {
			return nil, err
		}
		if s != nil && s.Service == k.name {
			list = append(list, s)
		}
	}
	sortSlices(list)
	return list, nil
}
