package iptables

import (
	"bytes"
	"slices"
	"sort"

	"github.com/minik8s/minik8s/pkg/proxy"
)

// builder lays out the rules and remembers, per service port, what it laid out: its lines
// in our top-level chains, and the names, rule counts and hashes of its own chains (not
// their text). A full build lays out every port; an update lays out only the ports of the
// Services that changed and says which chains to write (own chains whose rules differ,
// top-level chains some port's lines in them differ) and which to delete, so a
// one-endpoint change at 10 000 services costs one port's layout, not 10 000.
type builder struct {
	cfg   Config
	ports map[portKey]*fragment
	order []portKey // sorted: the order of the ports' lines in the top-level chains
	rules [2]int    // filter, nat: rules in the tables now, for the metrics
}

type portKey struct {
	name     string
	protocol string
}

func keyOf(sp *proxy.ServicePort) portKey { return portKey{sp.Name, string(sp.Protocol)} }

func (k portKey) compare(o portKey) int {
	if k.name != o.name {
		if k.name < o.name {
			return -1
		}
		return 1
	}
	if k.protocol != o.protocol {
		if k.protocol < o.protocol {
			return -1
		}
		return 1
	}
	return 0
}

// fragment is one service port's part of the tables.
type fragment struct {
	shared [2][]sharedLines // filter, nat: its lines in our top-level chains
	own    [2][]ownChain    // filter, nat: its own chains (KUBE-SVC-..., KUBE-SEP-..., ...)
}

type sharedLines struct {
	chain string
	text  []byte
	rules int
}

type ownChain struct {
	chain string
	rules int
	sum   uint64
}

func (f *fragment) rules(ti int) int {
	n := 0
	for _, s := range f.shared[ti] {
		n += s.rules
	}
	for _, o := range f.own[ti] {
		n += o.rules
	}
	return n
}

// fixed are our top-level chains with their fixed rules: the chains every port may add
// lines to.
var fixed = func() [2]*table {
	filter, nat := baseTables()
	return [2]*table{filter, nat}
}()

// build lays out every port (sorted by name and protocol, as a snapshot is) anew.
func (b *builder) build(ports []proxy.ServicePort) ruleSet {
	b.ports = make(map[portKey]*fragment, len(ports))
	b.order = make([]portKey, 0, len(ports))
	out := [2]*table{newTable("filter"), newTable("nat")}
	dirty := [2]map[string]bool{{}, {}}
	for ti := range out {
		b.rules[ti] = 0
		for _, c := range fixed[ti].order {
			dirty[ti][c] = true
		}
	}
	for i := range ports {
		sp := &ports[i]
		k := keyOf(sp)
		if b.ports[k] != nil {
			continue // a port named twice: the API server refuses it, the first one counts
		}
		f, own := b.layout(sp)
		b.ports[k] = f
		b.order = append(b.order, k)
		for ti := range out {
			b.rules[ti] += f.rules(ti)
			for _, o := range f.own[ti] {
				out[ti].put(o.chain, own[ti].chains[o.chain])
			}
		}
	}
	slices.SortFunc(b.order, portKey.compare) // sorted already when they come from a snapshot
	b.assemble(out, dirty)
	return ruleSet{filter: out[0], nat: out[1]}
}

// update lays out the ports of the changed Services. The tables it returns hold only the
// chains to write; stale are the chains (per table) that no port has any more.
func (b *builder) update(changes []proxy.Change) (rs ruleSet, stale [2][]string) {
	out := [2]*table{newTable("filter"), newTable("nat")}
	dirty := [2]map[string]bool{{}, {}}
	old := [2]map[string]uint64{{}, {}} // own chains of the ports taken out: their sums as written
	before := map[portKey]*fragment{}
	for _, ch := range changes {
		for i := range ch.Before {
			k := keyOf(&ch.Before[i])
			f := b.ports[k]
			if f == nil {
				continue
			}
			before[k] = f
			b.remove(k)
			for ti := range out {
				b.rules[ti] -= f.rules(ti)
				for _, o := range f.own[ti] {
					old[ti][o.chain] = o.sum
				}
			}
		}
	}
	for _, ch := range changes {
		for i := range ch.After {
			sp := &ch.After[i]
			k := keyOf(sp)
			if b.ports[k] != nil {
				continue
			}
			f, own := b.layout(sp)
			b.insert(k, f)
			prev := before[k]
			delete(before, k)
			for ti := range out {
				b.rules[ti] += f.rules(ti)
				for _, o := range f.own[ti] {
					if sum, ok := old[ti][o.chain]; ok {
						delete(old[ti], o.chain)
						if sum == o.sum {
							continue // as written: the chain keeps its counters
						}
					}
					out[ti].put(o.chain, own[ti].chains[o.chain])
				}
				var was []sharedLines
				if prev != nil {
					was = prev.shared[ti]
				}
				if !sameShared(was, f.shared[ti]) {
					markShared(dirty[ti], was)
					markShared(dirty[ti], f.shared[ti])
				}
			}
		}
	}
	for _, f := range before { // ports gone
		for ti := range dirty {
			markShared(dirty[ti], f.shared[ti])
		}
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
func (b *builder) layout(sp *proxy.ServicePort) (*fragment, [2]*table) {
	own := [2]*table{newTable("filter"), newTable("nat")}
	addServicePort(b.cfg, own[0], own[1], sp)
	f := &fragment{}
	for ti, t := range own {
		for _, c := range t.order {
			ct := t.chains[c]
			if _, top := fixed[ti].chains[c]; top {
				// Kept until the port changes: an exact copy, not the layout's buffer.
				f.shared[ti] = append(f.shared[ti], sharedLines{c, bytes.Clone(ct.text), ct.rules})
				continue
			}
			f.own[ti] = append(f.own[ti], ownChain{c, ct.rules, t.sum(c)})
		}
	}
	return f, own
}

// assemble lays the dirty top-level chains out whole into out: their fixed rules, every
// port's lines in order and, last in nat KUBE-SERVICES, the jump to the node ports.
func (b *builder) assemble(out [2]*table, dirty [2]map[string]bool) {
	for ti, t := range out {
		if len(dirty[ti]) == 0 {
			continue
		}
		chains := map[string]*chainText{}
		for _, c := range fixed[ti].order { // in their fixed order
			if dirty[ti][c] {
				f := fixed[ti].chains[c]
				chains[c] = &chainText{text: slices.Clone(f.text), rules: f.rules}
				t.put(c, chains[c])
			}
		}
		for _, k := range b.order {
			for _, s := range b.ports[k].shared[ti] {
				if ct := chains[s.chain]; ct != nil {
					ct.text = append(ct.text, s.text...)
					ct.rules += s.rules
				}
			}
		}
		if t.name == "nat" && chains[kubeServices] != nil {
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

func (b *builder) insert(k portKey, f *fragment) {
	b.ports[k] = f
	i, _ := slices.BinarySearchFunc(b.order, k, portKey.compare)
	b.order = slices.Insert(b.order, i, k)
}

func (b *builder) remove(k portKey) {
	delete(b.ports, k)
	if i, ok := slices.BinarySearchFunc(b.order, k, portKey.compare); ok {
		b.order = slices.Delete(b.order, i, i+1)
	}
}

func sameShared(a, b []sharedLines) bool {
	return slices.EqualFunc(a, b, func(x, y sharedLines) bool { return x.chain == y.chain && bytes.Equal(x.text, y.text) })
}

func markShared(dirty map[string]bool, lines []sharedLines) {
	for _, s := range lines {
		dirty[s.chain] = true
	}
}
