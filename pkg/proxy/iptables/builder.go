package iptables

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"
	"strings"

	"github.com/minik8s/minik8s/pkg/proxy"
)

// builder lays out the rules and remembers, per service port, what it laid out: its lines
// in our top-level chains, and the names, rule counts and hashes of its own chains (not
// their text). A full build lays out every port; an update lays out only the ports of the
// Services that changed and says which chains to write (own chains whose rules differ,
// top-level chains some port's lines in them differ) and which to delete, so a
// one-endpoint change at 10 000 services costs one port's layout, not 10 000.
//
// What it remembers of a port is one allocation (fragment.data), in a slice sorted by
// port: at 10 000 ports a map of fragments, each with its slices and chain-name strings,
// was 7 objects and ~630 bytes a port, the largest part of the proxier's memory between
// syncs (BenchmarkBuilderMemory).
type builder struct {
	cfg   Config
	ports []fragment // sorted by key: the order of the ports' lines in the top-level chains
	rules [2]int     // filter, nat: rules in the tables now, for the metrics
	// noLocal: ports whose internal, external traffic policy is Local with no endpoint here
	// but some elsewhere (proxy.ServicePort.NoLocalEndpoints), for the metrics.
	noLocal [2]int
}

// countNoLocal adds sp's NoLocalEndpoints to b.noLocal, times sign.
func (b *builder) countNoLocal(sp *proxy.ServicePort, sign int) {
	internal, external := sp.NoLocalEndpoints()
	for i, no := range [2]bool{internal, external} {
		if no {
			b.noLocal[i] += sign
		}
	}
}

type portKey struct {
	name     string
	protocol string
}

func keyOf(sp *proxy.ServicePort) portKey { return portKey{sp.Name, string(sp.Protocol)} }

func (k portKey) compare(o portKey) int {
	if c := strings.Compare(k.name, o.name); c != 0 {
		return c
	}
	return strings.Compare(k.protocol, o.protocol)
}

// fragment is one service port's part of the tables, encoded in data: first its own chains
// (KUBE-SVC-..., KUBE-SEP-..., ...), each as
//
//	table (0 filter, 1 nat), name length, name, rule count (uint32), hash (uint64)
//
// then, from split on, its lines in our top-level chains, each as
//
//	table, the chain's index in fixed[table].order, rule count (uint32), text length (uint32), text
type fragment struct {
	key   portKey
	data  []byte
	split uint32
}

// ownChain is one of a port's own chains as a fragment holds it.
type ownChain struct {
	table int
	chain []byte // in the fragment's data: copy it to keep it
	rules int
	sum   uint64
}

// sharedLines are a port's lines in one top-level chain.
type sharedLines struct {
	table, chain int // chain: index in fixed[table].order
	text         []byte
	rules        int
}

// laidOut is one of a port's own chains as laid out, for newFragment.
type laidOut struct {
	table int
	chain string
	rules int
	sum   uint64
}

// newFragment encodes own and shared.
func newFragment(k portKey, own []laidOut, shared []sharedLines) fragment {
	n := 0
	for _, o := range own {
		n += 2 + len(o.chain) + 4 + 8
	}
	split := n
	for _, s := range shared {
		n += 2 + 4 + 4 + len(s.text)
	}
	d := make([]byte, 0, n)
	for _, o := range own {
		d = append(d, byte(o.table), byte(len(o.chain)))
		d = append(d, o.chain...)
		d = binary.LittleEndian.AppendUint32(d, uint32(o.rules))
		d = binary.LittleEndian.AppendUint64(d, o.sum)
	}
	for _, s := range shared {
		d = append(d, byte(s.table), byte(s.chain))
		d = binary.LittleEndian.AppendUint32(d, uint32(s.rules))
		d = binary.LittleEndian.AppendUint32(d, uint32(len(s.text)))
		d = append(d, s.text...)
	}
	return fragment{key: k, data: d, split: uint32(split)}
}

// own are the port's own chains.
func (f *fragment) own(yield func(ownChain) bool) {
	d := f.data[:f.split]
	for len(d) > 0 {
		o := ownChain{table: int(d[0])}
		n := int(d[1])
		o.chain, d = d[2:2+n], d[2+n:]
		o.rules, o.sum = int(binary.LittleEndian.Uint32(d)), binary.LittleEndian.Uint64(d[4:])
		d = d[12:]
		if !yield(o) {
			return
		}
	}
}

// shared are the port's lines in our top-level chains.
func (f *fragment) shared(yield func(sharedLines) bool) {
	d := f.data[f.split:]
	for len(d) > 0 {
		s := sharedLines{table: int(d[0]), chain: int(d[1]), rules: int(binary.LittleEndian.Uint32(d[2:]))}
		n := int(binary.LittleEndian.Uint32(d[6:]))
		s.text, d = d[10:10+n], d[10+n:]
		if !yield(s) {
			return
		}
	}
}

func (f *fragment) rules(ti int) int {
	n := 0
	for s := range f.shared {
		if s.table == ti {
			n += s.rules
		}
	}
	for o := range f.own {
		if o.table == ti {
			n += o.rules
		}
	}
	return n
}

// sameShared: f and g have the same lines in the top-level chains.
func (f *fragment) sameShared(g *fragment) bool {
	return bytes.Equal(f.data[f.split:], g.data[g.split:])
}

// markShared marks the top-level chains f has lines in.
func (f *fragment) markShared(dirty [2]map[string]bool) {
	for s := range f.shared {
		dirty[s.table][fixed[s.table].order[s.chain]] = true
	}
}

// fixed are our top-level chains with their fixed rules: the chains every port may add
// lines to.
var fixed = func() [2]*table {
	filter, nat := baseTables()
	return [2]*table{filter, nat}
}()

// build lays out every port (sorted by name and protocol, as a snapshot is) anew.
func (b *builder) build(ports []proxy.ServicePort) ruleSet {
	b.ports = make([]fragment, 0, len(ports))
	b.noLocal = [2]int{}
	out := [2]*table{newTable("filter"), newTable("nat")}
	dirty := [2]map[string]bool{{}, {}}
	for ti := range out {
		b.rules[ti] = 0
		for _, c := range fixed[ti].order {
			dirty[ti][c] = true
		}
	}
	// A port named twice (the API server refuses it): the first one counts. A snapshot's
	// ports are sorted, so a name repeated follows itself; only other input needs a set.
	sorted := slices.IsSortedFunc(ports, func(x, y proxy.ServicePort) int { return keyOf(&x).compare(keyOf(&y)) })
	var seen map[portKey]bool
	if !sorted {
		seen = make(map[portKey]bool, len(ports))
	}
	for i := range ports {
		sp := &ports[i]
		k := keyOf(sp)
		if sorted && i > 0 && keyOf(&ports[i-1]) == k || !sorted && seen[k] {
			continue
		}
		if !sorted {
			seen[k] = true
		}
		f, own := b.layout(sp)
		b.ports = append(b.ports, f)
		b.countNoLocal(sp, 1)
		for ti := range out {
			b.rules[ti] += f.rules(ti)
		}
		for o := range f.own {
			c := string(o.chain)
			out[o.table].put(c, own[o.table].chains[c])
		}
	}
	slices.SortFunc(b.ports, func(x, y fragment) int { return x.key.compare(y.key) })
	b.assemble(out, dirty)
	return ruleSet{filter: out[0], nat: out[1]}
}

// update lays out the ports of the changed Services. The tables it returns hold only the
// chains to write; stale are the chains (per table) that no port has any more.
func (b *builder) update(changes []proxy.Change) (rs ruleSet, stale [2][]string) {
	out := [2]*table{newTable("filter"), newTable("nat")}
	dirty := [2]map[string]bool{{}, {}}
	old := [2]map[string]uint64{{}, {}} // own chains of the ports taken out: their sums as written
	before := map[portKey]fragment{}
	for _, ch := range changes {
		for i := range ch.Before {
			k := keyOf(&ch.Before[i])
			f, ok := b.remove(k)
			if !ok {
				continue
			}
			before[k] = f
			b.countNoLocal(&ch.Before[i], -1)
			for ti := range out {
				b.rules[ti] -= f.rules(ti)
			}
			for o := range f.own {
				old[o.table][string(o.chain)] = o.sum
			}
		}
	}
	for _, ch := range changes {
		for i := range ch.After {
			sp := &ch.After[i]
			k := keyOf(sp)
			if _, ok := b.find(k); ok {
				continue
			}
			f, own := b.layout(sp)
			b.insert(f)
			b.countNoLocal(sp, 1)
			prev, had := before[k]
			delete(before, k)
			for ti := range out {
				b.rules[ti] += f.rules(ti)
			}
			for o := range f.own {
				c := string(o.chain)
				if sum, ok := old[o.table][c]; ok {
					delete(old[o.table], c)
					if sum == o.sum {
						continue // as written: the chain keeps its counters
					}
				}
				out[o.table].put(c, own[o.table].chains[c])
			}
			if !had || !prev.sameShared(&f) {
				if had {
					prev.markShared(dirty)
				}
				f.markShared(dirty)
			}
		}
	}
	for _, f := range before { // ports gone
		f.markShared(dirty)
	}
	b.assemble(out, dirty)
	for ti := range old {
		for c := range old[ti] {
			stale[ti] = append(stale[ti], c)
		}
		sort.Strings(stale[ti])
	}
	return ruleSet{filter: out[0], nat: out[1]}, stale
}

// layout lays out one port: its fragment, and its own chains' text by table.
func (b *builder) layout(sp *proxy.ServicePort) (fragment, [2]*table) {
	own := [2]*table{newTable("filter"), newTable("nat")}
	addServicePort(b.cfg, own[0], own[1], sp)
	var owns []laidOut
	var shared []sharedLines
	for ti, t := range own {
		for _, c := range t.order {
			ct := t.chains[c]
			if i := slices.Index(fixed[ti].order, c); i >= 0 {
				shared = append(shared, sharedLines{table: ti, chain: i, text: ct.text, rules: ct.rules})
				continue
			}
			owns = append(owns, laidOut{table: ti, chain: c, rules: ct.rules, sum: t.sum(c)})
		}
	}
	return newFragment(keyOf(sp), owns, shared), own
}

// assemble lays the dirty top-level chains out whole into out: their fixed rules, every
// port's lines in order and, last in nat KUBE-SERVICES, the jump to the node ports.
func (b *builder) assemble(out [2]*table, dirty [2]map[string]bool) {
	for ti, t := range out {
		if len(dirty[ti]) == 0 {
			continue
		}
		chains := make([]*chainText, len(fixed[ti].order))
		for i, c := range fixed[ti].order { // in their fixed order
			if dirty[ti][c] {
				f := fixed[ti].chains[c]
				chains[i] = &chainText{text: slices.Clone(f.text), rules: f.rules}
				t.put(c, chains[i])
			}
		}
		for i := range b.ports {
			for s := range b.ports[i].shared {
				if s.table != ti {
					continue
				}
				if ct := chains[s.chain]; ct != nil {
					ct.text = append(ct.text, s.text...)
					ct.rules += s.rules
				}
			}
		}
		if t.name == "nat" && dirty[ti][kubeServices] {
			addNodePortsJump(t)
		}
	}
}

// addNodePortsJump is the last rule of nat KUBE-SERVICES.
func addNodePortsJump(nat *table) {
	nat.add(kubeServices, comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain"),
		"-m addrtype --dst-type LOCAL", "-j", kubeNodePorts)
}

// totalRules are the rules in table ti (0 filter, 1 nat) now.
func (b *builder) totalRules(ti int) int { return b.rules[ti] + fixedRules[ti] }

// fixedRules are the rules of the top-level chains that no port adds, by table.
var fixedRules = [2]int{fixed[0].rules(), fixed[1].rules() + 1} // + the node ports jump

// find is where port k is in b.ports, or would be.
func (b *builder) find(k portKey) (int, bool) {
	return slices.BinarySearchFunc(b.ports, k, func(f fragment, k portKey) int { return f.key.compare(k) })
}

func (b *builder) insert(f fragment) {
	i, _ := b.find(f.key)
	b.ports = slices.Insert(b.ports, i, f)
}

// remove takes port k out and returns what it had.
func (b *builder) remove(k portKey) (fragment, bool) {
	i, ok := b.find(k)
	if !ok {
		return fragment{}, false
	}
	f := b.ports[i]
	b.ports = slices.Delete(b.ports, i, i+1)
	return f, true
}
