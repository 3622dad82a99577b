package iptables

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/minik8s/minik8s/pkg/proxy"
)

// builder lays out the rules of every service port, reusing what it laid out last time for
// ports that did not change: at 10 000 services a one-endpoint change then costs the layout
// of one port, not 80 000 rules. It keeps, per port, a hash of the port, its lines in the
// shared top-level chains, and the names, rule counts and hashes of its own chains (not
// their text: a reused chain is unchanged, so a partial sync does not write it).
type builder struct {
	cfg   Config
	ports map[portKey]*fragment
	sizes [2]int // chains per table last time, to size the next build's maps
}

type portKey struct {
	name     string
	protocol string
}

// fragment is one service port's part of the tables.
type fragment struct {
	hash   uint64
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

// build lays out ports; a port equal to last build's is reused.
func (b *builder) build(ports []proxy.ServicePort) ruleSet {
	filter, nat := baseTables()
	tables := [2]*table{filter, nat}
	for i, t := range tables {
		// Sized once: growing a 30 000-chain map costs more than the rest of a partial sync.
		grown := make(map[string]*chainText, b.sizes[i])
		for c, ct := range t.chains {
			grown[c] = ct
		}
		t.chains = grown
		t.order = append(make([]string, 0, b.sizes[i]), t.order...)
	}
	next := make(map[portKey]*fragment, len(ports))
	for i := range ports {
		sp := &ports[i]
		key := portKey{sp.Name, string(sp.Protocol)}
		h := portHash(sp)
		if f := b.ports[key]; f != nil && f.hash == h {
			f.mergeInto(tables)
			next[key] = f
			continue
		}
		ff, fn := newTable("filter"), newTable("nat")
		addServicePort(b.cfg, ff, fn, sp)
		f := &fragment{hash: h}
		for ti, ft := range [2]*table{ff, fn} {
			dst := tables[ti]
			for _, c := range ft.order {
				ct := ft.chains[c]
				if top, ok := dst.chains[c]; ok {
					f.shared[ti] = append(f.shared[ti], sharedLines{c, ct.text, ct.rules})
					top.text = append(top.text, ct.text...)
					top.rules += ct.rules
					continue
				}
				f.own[ti] = append(f.own[ti], ownChain{c, ct.rules, ft.sum(c)})
				dst.order = append(dst.order, c)
				dst.chains[c] = ct
			}
		}
		next[key] = f
	}
	b.ports = next
	b.sizes = [2]int{len(filter.order), len(nat.order)}
	nat.add(kubeServices, comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain"),
		"-m addrtype --dst-type LOCAL", "-j", kubeNodePorts)
	return ruleSet{filter: filter, nat: nat}
}

// mergeInto adds a reused fragment: its shared lines appended, its own chains as
// placeholders carrying their hash.
func (f *fragment) mergeInto(tables [2]*table) {
	for ti, dst := range tables {
		for _, s := range f.shared[ti] {
			top := dst.chains[s.chain]
			top.text = append(top.text, s.text...)
			top.rules += s.rules
		}
		placeholders := make([]chainText, len(f.own[ti]))
		for i, o := range f.own[ti] {
			placeholders[i] = chainText{rules: o.rules, sum: o.sum, summed: true, reused: true}
			dst.order = append(dst.order, o.chain)
			dst.chains[o.chain] = &placeholders[i]
		}
	}
}

// portHash covers every field of a service port the rules depend on.
func portHash(sp *proxy.ServicePort) uint64 {
	h := fnv.New64a()
	str := func(s string) { _, _ = h.Write([]byte(s)); _, _ = h.Write([]byte{0}) }
	num := func(n int64) { _, _ = h.Write(binary.LittleEndian.AppendUint64(nil, uint64(n))) }
	flag := func(b bool) {
		if b {
			num(1)
		} else {
			num(0)
		}
	}
	list := func(l []string) {
		num(int64(len(l)))
		for _, s := range l {
			str(s)
		}
	}
	str(sp.Name)
	str(string(sp.Protocol))
	str(sp.ClusterIP)
	num(int64(sp.Port))
	num(int64(sp.NodePort))
	list(sp.ExternalIPs)
	list(sp.LoadBalancerIPs)
	list(sp.SourceRanges)
	num(int64(sp.AffinitySeconds))
	flag(sp.ExternalLocal)
	flag(sp.InternalLocal)
	num(int64(len(sp.Endpoints)))
	for _, e := range sp.Endpoints {
		str(e.IP)
		num(int64(e.Port))
		flag(e.Ready)
		flag(e.Serving)
		flag(e.Terminating)
		flag(e.Local)
	}
	return h.Sum64()
}
