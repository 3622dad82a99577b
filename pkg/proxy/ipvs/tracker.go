package ipvs

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	corev1 "k8s.io/api/core/v1"
)

// tracker keeps the wanted state between syncs, as kube-proxy's change tracking does: a
// service port equal to the one of the last update keeps its computed share, a changed,
// new or removed one has its share taken out and put back, and what that changed (virtual
// servers, addresses, set entries) is remembered until the proxier has applied it. At
// 10 000 Services a one-endpoint change then recomputes one port, and a sync sends only
// its differences without walking the other 9 999.
type tracker struct {
	sched   string
	nodeIPs []net.IP // NodePorts were computed for these; when they change, all is recomputed
	ports   map[portKey]*trackedPort
	gen     uint64
	st      *state // the aggregate wanted state

	// Reference counts: two service ports may want the same address (a shared external IP),
	// the same set entry (the hairpin entry of an endpoint) or even the same virtual server.
	claims    map[vsKey][]*virtualServer
	addrRefs  map[string]int
	entryRefs map[setEntry]int

	// Changed since the last markApplied: what a partial sync must look at.
	dirtyVS      map[vsKey]bool
	dirtyAddrs   map[string]bool
	dirtyEntries map[setEntry]bool
}

type portKey struct {
	name     string
	protocol corev1.Protocol
}

type trackedPort struct {
	sp   proxy.ServicePort
	part portPart
	seen uint64 // the update that last saw it
}

func newTracker(cfg Config, nodeIPs []net.IP) *tracker {
	sched := cfg.Scheduler
	if sched == "" {
		sched = "rr"
	}
	return &tracker{sched: sched, nodeIPs: slices.Clone(nodeIPs), ports: map[portKey]*trackedPort{},
		st:     &state{services: map[vsKey]*virtualServer{}, addrs: map[string]bool{}, sets: ipset.KubeSets()},
		claims: map[vsKey][]*virtualServer{}, addrRefs: map[string]int{}, entryRefs: map[setEntry]int{},
		dirtyVS: map[vsKey]bool{}, dirtyAddrs: map[string]bool{}, dirtyEntries: map[setEntry]bool{}}
}

// update brings the wanted state to ports (all of them: a full sync) and returns how many
// service ports it recomputed (changed, added or removed). The caller makes a new tracker
// when the node addresses change (every NodePort virtual server changes with them).
func (t *tracker) update(ports []proxy.ServicePort, nodeIPs []net.IP) int {
	t.gen++
	n := 0
	for i := range ports {
		if t.set(&ports[i], nodeIPs) {
			n++
		}
	}
	for k, tp := range t.ports {
		if tp.seen != t.gen {
			t.take(tp.part)
			delete(t.ports, k)
			n++
		}
	}
	return n
}

// change applies the changes of the Services the informers named (a partial sync): the
// other service ports are not looked at. It returns how many service ports it recomputed.
func (t *tracker) change(changes []proxy.Change, nodeIPs []net.IP) int {
	t.gen++
	n := 0
	for _, c := range changes {
		for i := range c.After {
			if t.set(&c.After[i], nodeIPs) {
				n++
			}
		}
		for i := range c.Before {
			k := portKey{c.Before[i].Name, c.Before[i].Protocol}
			if tp := t.ports[k]; tp != nil && tp.seen != t.gen { // gone from the Service
				t.take(tp.part)
				delete(t.ports, k)
				n++
			}
		}
	}
	return n
}

// set makes sp's share of the wanted state current and says whether it had to be
// recomputed (sp is new or differs from the last one).
func (t *tracker) set(sp *proxy.ServicePort, nodeIPs []net.IP) bool {
	k := portKey{sp.Name, sp.Protocol}
	tp := t.ports[k]
	if tp != nil && samePort(&tp.sp, sp) {
		tp.seen = t.gen
		return false
	}
	if tp != nil {
		t.take(tp.part)
	}
	t.ports[k] = &trackedPort{sp: *sp, part: computePort(t.sched, sp, nodeIPs), seen: t.gen}
	t.put(t.ports[k].part)
	return true
}

// udpPorts are the tracked UDP service ports: what the conntrack cleanup reads.
func (t *tracker) udpPorts() []proxy.ServicePort {
	var out []proxy.ServicePort
	for _, tp := range t.ports {
		if tp.sp.Protocol == corev1.ProtocolUDP {
			out = append(out, tp.sp)
		}
	}
	return out
}

// put adds a port's share to the aggregate.
func (t *tracker) put(part portPart) {
	for _, vs := range part.services {
		t.claims[vs.Key] = append(t.claims[vs.Key], vs)
		t.st.services[vs.Key] = winner(t.claims[vs.Key])
		t.dirtyVS[vs.Key] = true
	}
	for _, ip := range part.addrs {
		if t.addrRefs[ip]++; t.addrRefs[ip] == 1 {
			t.st.addrs[ip] = true
			t.dirtyAddrs[ip] = true
		}
	}
	for _, e := range part.entries {
		if t.entryRefs[e]++; t.entryRefs[e] == 1 {
			t.st.sets[e.set].Add(e.entry)
			t.dirtyEntries[e] = true
		}
	}
}

// take removes a port's share from the aggregate.
func (t *tracker) take(part portPart) {
	for _, vs := range part.services {
		c := slices.DeleteFunc(t.claims[vs.Key], func(o *virtualServer) bool { return o == vs })
		if len(c) == 0 {
			delete(t.claims, vs.Key)
			delete(t.st.services, vs.Key)
		} else {
			t.claims[vs.Key] = c
			t.st.services[vs.Key] = winner(c)
		}
		t.dirtyVS[vs.Key] = true
	}
	for _, ip := range part.addrs {
		if t.addrRefs[ip]--; t.addrRefs[ip] == 0 {
			delete(t.addrRefs, ip)
			delete(t.st.addrs, ip)
			t.dirtyAddrs[ip] = true
		}
	}
	for _, e := range part.entries {
		if t.entryRefs[e]--; t.entryRefs[e] == 0 {
			delete(t.entryRefs, e)
			delete(t.st.sets[e.set].Entries, e.entry)
			t.dirtyEntries[e] = true
		}
	}
}

// winner is the virtual server kept when service ports collide on one (two Services with
// the same external IP and port): the one of the greatest port name, whatever order the
// ports came in.
func winner(claims []*virtualServer) *virtualServer {
	w := claims[0]
	for _, c := range claims[1:] {
		if c.Service > w.Service {
			w = c
		}
	}
	return w
}

// markApplied forgets the changes: the kernel now holds them.
func (t *tracker) markApplied() {
	clear(t.dirtyVS)
	clear(t.dirtyAddrs)
	clear(t.dirtyEntries)
}

// setChanges is the `ipset restore` input for the changed entries, each added or deleted
// as the wanted state now says (-exist: an entry taken out and put back in one update
// may already be there).
func (t *tracker) setChanges() string {
	var b strings.Builder
	for e := range t.dirtyEntries {
		op := "del"
		if t.st.sets[e.set].Entries[e.entry] {
			op = "add"
		}
		fmt.Fprintf(&b, "%s %s %s -exist\n", op, e.set, e.entry)
	}
	return b.String()
}

// samePort says whether two service ports want the same state: every field compared.
func samePort(a, b *proxy.ServicePort) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && a.ClusterIP == b.ClusterIP && a.Port == b.Port &&
		a.NodePort == b.NodePort && a.AffinitySeconds == b.AffinitySeconds && a.HealthCheckNodePort == b.HealthCheckNodePort &&
		a.ExternalLocal == b.ExternalLocal && a.InternalLocal == b.InternalLocal && a.AllowFromNode == b.AllowFromNode &&
		slices.Equal(a.ExternalIPs, b.ExternalIPs) && slices.Equal(a.LoadBalancerIPs, b.LoadBalancerIPs) &&
		slices.Equal(a.SourceRanges, b.SourceRanges) && slices.Equal(a.Endpoints, b.Endpoints)
}

// sameIPs compares two lists of node addresses.
func sameIPs(a, b []net.IP) bool {
	return slices.EqualFunc(a, b, func(x, y net.IP) bool { return x.Equal(y) })
}
