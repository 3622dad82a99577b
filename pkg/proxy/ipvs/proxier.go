package ipvs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goipt "github.com/coreos/go-iptables/iptables"
	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/conntrack"
	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	libipvs "github.com/moby/ipvs"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// SyncResult says what one sync did, for metrics, logs and the benchmark.
type SyncResult struct {
	Full           bool
	Duration       time.Duration
	Snapshot       time.Duration // reading Services and EndpointSlices, within Duration
	ServicePorts   int
	Recomputed     int           // service ports whose wanted state was computed (changed ones, or all)
	Wanted         time.Duration // computing the wanted state, within Duration
	VirtualServers int
	RealServers    int
	IPVSCalls      int // netlink requests changing IPVS
	AddrCalls      int // addresses bound or unbound on kube-ipvs0
	SetLines       int // ipset restore lines
	NATRules       int
	FilterRules    int
	RulesWritten   bool
	// Where the time went, within Duration: reading the kernel (full syncs), binding
	// addresses, programming IPVS, the ip sets, the rules.
	ReadTime, AddrTime, IPVSTime, SetsTime, RulesTime time.Duration
	// ConntrackTime is deleting stale UDP flows (ConntrackDeleted of them), after the rest.
	ConntrackTime    time.Duration
	ConntrackDeleted uint
	// NoLocalInternal, NoLocalExternal: service ports whose Local traffic policy finds no
	// endpoint here but some elsewhere (proxy.ServicePort.NoLocalEndpoints).
	NoLocalInternal, NoLocalExternal int
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Proxier keeps IPVS, kube-ipvs0, the ip sets and the rules equal to the Services and
// EndpointSlices it reads. A full sync (the first, the periodic one, after an error, when
// the node's addresses change) computes everything and compares it with the kernel; it
// then remembers the wanted state and what it wrote, and the next syncs recompute only the
// changed Services and send only their differences.
type Proxier struct {
	cfg  Config
	log  *slog.Logger
	ipvs ipvsHandle
	nl   *netlink.Handle // one socket for the address changes, not one per request

	snap *proxy.Snapshotter // told what changed (Changed); re-reads only those Services

	mu       sync.Mutex
	needFull bool
	track    *tracker                 // the wanted state, recomputed only for changed service ports
	applied  map[vsKey]*virtualServer // what IPVS holds, as of the last sync
	bound    map[string]bool          // addresses on kube-ipvs0, as of the last sync
	draining map[vsKey]bool           // virtual servers with removed TCP real servers at weight 0
	rules    string                   // the iptables-restore input last written
}

// ipvsHandle is the part of moby/ipvs's Handle the proxier uses (a fake in unit tests).
type ipvsHandle interface {
	GetServices() ([]*libipvs.Service, error)
	NewService(*libipvs.Service) error
	UpdateService(*libipvs.Service) error
	DelService(*libipvs.Service) error
	GetDestinations(*libipvs.Service) ([]*libipvs.Destination, error)
	NewDestination(*libipvs.Service, *libipvs.Destination) error
	UpdateDestination(*libipvs.Service, *libipvs.Destination) error
	DelDestination(*libipvs.Service, *libipvs.Destination) error
	SetConfig(*libipvs.Config) error
	Close()
}

// New checks that the kernel has IPVS and the scheduler, and makes a proxier whose first Sync
// is a full one.
// It reads API objects through listers; NewOn reads records.
func New(cfg Config, services corelisters.ServiceLister, slices discoverylisters.EndpointSliceLister, nodeName string, log *slog.Logger) (*Proxier, error) {
	return NewOn(cfg, proxy.Listers(services, slices), nodeName, log)
}

// NewOn is New reading src (miniproxy: its informers' records, proxy.Records).
func NewOn(cfg Config, src proxy.Source, nodeName string, log *slog.Logger) (*Proxier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h, err := openIPVS()
	if err != nil {
		return nil, err
	}
	for _, tool := range []string{"iptables-restore", "iptables-save", "ipset"} {
		if _, err := exec.LookPath(tool); err != nil {
			h.Close()
			return nil, fmt.Errorf("%s: %w (Debian packages iptables and ipset)", tool, err)
		}
	}
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("netlink: %w", err)
	}
	return &Proxier{cfg: cfg, log: log, ipvs: h, nl: nl, needFull: true,
		snap: &proxy.Snapshotter{Source: src, NodeName: nodeName}}, nil
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Scheduler != "" && !slices.Contains(Schedulers, c.Scheduler) {
		return fmt.Errorf("--ipvs-scheduler %q: not an IPVS scheduler (want one of %s)", c.Scheduler, strings.Join(Schedulers, ", "))
	}
	if c.ClusterCIDR != "" {
		if _, _, err := net.ParseCIDR(c.ClusterCIDR); err != nil {
			return fmt.Errorf("--cluster-cidr %q: %w", c.ClusterCIDR, err)
		}
	}
	for flag, d := range map[string]time.Duration{"--ipvs-tcp-timeout": c.TCPTimeout, "--ipvs-tcpfin-timeout": c.TCPFinTimeout, "--ipvs-udp-timeout": c.UDPTimeout} {
		if d < 0 || (d > 0 && d < time.Second) {
			return fmt.Errorf("%s %v: want 0 (the kernel's) or at least 1s", flag, d)
		}
	}
	return nil
}

// openIPVS opens a netlink handle to IPVS and proves it answers: without the ip_vs module
// moby/ipvs hands out a handle whose requests silently do nothing.
func openIPVS() (*libipvs.Handle, error) {
	h, err := libipvs.New("")
	if err != nil {
		return nil, fmt.Errorf("IPVS netlink handle: %w", err)
	}
	if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
		h.Close()
		return nil, fmt.Errorf("this kernel has no IPVS (load the ip_vs module: modprobe ip_vs): %w", err)
	}
	if _, err := h.GetServices(); err != nil {
		h.Close()
		return nil, fmt.Errorf("IPVS does not answer: %w", err)
	}
	return h, nil
}

// Close releases the netlink handles.
func (p *Proxier) Close() {
	p.ipvs.Close()
	p.nl.Close()
}

// ForceFull makes the next Sync a full one (the periodic resync).
func (p *Proxier) ForceFull() {
	p.mu.Lock()
	p.needFull = true
	p.mu.Unlock()
}

// Changed notes the Service (or EndpointSlice, or a deleted one's tombstone) an informer
// event is about (for an update, call it with the old and the new object): a partial sync
// reads again only the Services so named, as kube-proxy's change trackers. Call it before
// asking for the sync the event needs.
func (p *Proxier) Changed(obj any) { p.snap.Mark(obj) }

// SetNode says what the service ports read of this node's Node (its zone label and
// address): a change makes the next Sync a full one.
func (p *Proxier) SetNode(n proxy.NodeFacts) (changed bool) { return p.snap.SetNode(n) }

// Sync programs the kernel for the current Services and EndpointSlices: on a full sync all
// of them; otherwise only the Services named by Changed since the last sync.
func (p *Proxier) Sync(ctx context.Context) (SyncResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := time.Now()
	res, err := p.sync(ctx, start)
	if err != nil {
		p.needFull = true
		return res, err
	}
	p.needFull = false
	p.track.markApplied()
	t0 := time.Now()
	// All UDP service ports, not only the changed ones, as kube-proxy's cleanup: a flow
	// left stale by an older kernel or sent before its Service had endpoints is found on
	// the next sync whatever changed.
	if res.ConntrackDeleted, err = conntrack.CleanStaleUDP(p.track.udpPorts()); err != nil {
		p.log.Warn("conntrack cleanup failed", "err", err)
	}
	res.ConntrackTime = time.Since(t0)
	res.Duration = time.Since(start)
	return res, nil
}

// sync brings the wanted state up to date and writes it: on a full sync all of it, compared
// with what the kernel holds; otherwise the changes the tracker noted, compared with what
// was written.
func (p *Proxier) sync(ctx context.Context, start time.Time) (SyncResult, error) {
	res := SyncResult{Full: p.needFull}
	dummy, created, err := ensureDummy()
	if err != nil {
		return res, err
	}
	nodeIPs, err := p.nodeIPs(dummy)
	if err != nil {
		return res, err
	}
	// New node addresses change every NodePort: start over as on a full sync.
	res.Full = res.Full || p.track == nil || !sameIPs(p.track.nodeIPs, nodeIPs) || p.applied == nil || p.bound == nil || !p.snap.Ready()
	full := res.Full
	var ports []proxy.ServicePort
	var changes []proxy.Change
	if full {
		// A full sync reads everything anew, trusting no memory of earlier ones.
		p.snap.Forget()
		ports, err = p.snap.Snapshot()
	} else {
		changes, err = p.snap.Changes()
	}
	if err != nil {
		return res, err
	}
	res.Snapshot = time.Since(start)
	if full {
		if err := ensureSysctls(p.cfg, p.log); err != nil {
			return res, err
		}
		if c := p.cfg; c.TCPTimeout > 0 || c.TCPFinTimeout > 0 || c.UDPTimeout > 0 {
			// The kernel leaves a timeout given as 0 as it is.
			if err := p.ipvs.SetConfig(&libipvs.Config{TimeoutTCP: c.TCPTimeout, TimeoutTCPFin: c.TCPFinTimeout, TimeoutUDP: c.UDPTimeout}); err != nil {
				return res, fmt.Errorf("set IPVS timeouts: %w", err)
			}
		}
		p.track = newTracker(p.cfg, nodeIPs)
	}
	t0 := time.Now()
	t := p.track
	if full {
		res.Recomputed = t.update(ports, nodeIPs)
	} else {
		res.Recomputed = t.change(changes, nodeIPs)
	}
	res.Wanted = time.Since(t0)
	st := t.st
	res.ServicePorts = len(t.ports)
	for _, tp := range t.ports {
		internal, external := tp.sp.NoLocalEndpoints()
		res.NoLocalInternal += btoi(internal)
		res.NoLocalExternal += btoi(external)
	}
	res.VirtualServers = len(st.services)
	for _, vs := range st.services {
		res.RealServers += len(vs.Dests)
	}
	t0 = time.Now()
	if full {
		if p.bound, err = boundAddresses(dummy); err != nil {
			return res, err
		}
		if p.applied, err = p.readIPVS(p.bound, nodeIPs, st.addrs); err != nil {
			return res, err
		}
		p.draining = map[vsKey]bool{} // a full sync visits every virtual server and finds them again
	}
	res.ReadTime = time.Since(t0)
	// What to look at: everything on a full sync, the changes otherwise.
	addAddrs, delAddrs := st.addrs, p.bound
	if !full {
		addAddrs, delAddrs = t.dirtyAddrs, t.dirtyAddrs
		if created { // kube-ipvs0 deleted behind our back: none of its addresses remain
			p.bound = map[string]bool{}
			addAddrs = st.addrs
		}
	}
	// Addresses first: a virtual server on an address the node does not own gets nothing.
	t0 = time.Now()
	for ip := range addAddrs {
		if st.addrs[ip] && !p.bound[ip] {
			if err := p.nl.AddrAdd(dummy, &netlink.Addr{IPNet: host(ip)}); err != nil && !errors.Is(err, unix.EEXIST) {
				return res, fmt.Errorf("bind %s to %s: %w", ip, DummyDevice, err)
			}
			p.bound[ip] = true
			res.AddrCalls++
		}
	}
	res.AddrTime = time.Since(t0)
	t0 = time.Now()
	calls, err := p.syncIPVS(st.services, full, t.dirtyVS)
	res.IPVSCalls = calls
	if err != nil {
		return res, err
	}
	res.IPVSTime = time.Since(t0)
	t0 = time.Now()
	for ip := range delAddrs {
		if !st.addrs[ip] && p.bound[ip] {
			if err := p.nl.AddrDel(dummy, &netlink.Addr{IPNet: host(ip)}); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
				return res, fmt.Errorf("unbind %s from %s: %w", ip, DummyDevice, err)
			}
			delete(p.bound, ip)
			res.AddrCalls++
		}
	}
	res.AddrTime += time.Since(t0)
	t0 = time.Now()
	if full {
		// A Syncer of its own: it compares with the kernel (one ipset save).
		res.SetLines, err = (&ipset.Syncer{}).Sync(ctx, st.orderedSets())
	} else {
		script := t.setChanges()
		res.SetLines, err = strings.Count(script, "\n"), ipset.Restore(ctx, script)
	}
	if err != nil {
		return res, err
	}
	res.SetsTime = time.Since(t0)
	t0 = time.Now()
	r := buildRules(p.cfg, st.sets)
	res.NATRules, res.FilterRules = count(r.nat), count(r.filter)
	// The rules are few: rewritten whole when they change, and on a full sync,
	// which also puts back any jump from the built-in chains someone removed.
	if text := r.restore(); full || text != p.rules {
		var missing []jump
		if full {
			if missing, err = missingJumps(ctx); err != nil {
				return res, err
			}
		}
		cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5", "--noflush")
		cmd.Stdin = strings.NewReader(withJumps(text, missing))
		if out, err := cmd.CombinedOutput(); err != nil {
			p.rules = ""
			return res, fmt.Errorf("iptables-restore: %w: %s", err, strings.TrimSpace(string(out)))
		}
		p.rules = text
		res.RulesWritten = true
	}
	res.RulesTime = time.Since(t0)
	return res, nil
}

// missingJumps reads the tables (one iptables-save) for the jumps into our chains.
func missingJumps(ctx context.Context) ([]jump, error) {
	out, err := exec.CommandContext(ctx, "iptables-save").Output()
	if err != nil {
		return nil, fmt.Errorf("iptables-save: %w", err)
	}
	have := map[string]bool{}
	table := ""
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "*") {
			table = line[1:]
		} else if strings.HasPrefix(line, "-A ") {
			have[table+" "+line] = true
		}
	}
	var missing []jump
	for _, j := range jumps {
		if !have[j.table+" -A "+j.chain+" "+j.text()] {
			missing = append(missing, j)
		}
	}
	return missing, nil
}

// withJumps adds to the restore input the missing jumps, first in their built-in chains.
func withJumps(text string, missing []jump) string {
	for _, j := range missing {
		marker := "*" + j.table + "\n"
		i := strings.Index(text, marker)
		commit := i + strings.Index(text[i:], "COMMIT\n")
		text = text[:commit] + "-I " + j.chain + " 1 " + j.text() + "\n" + text[commit:]
	}
	return text
}

// syncIPVS turns p.applied into want: on a full sync every virtual server, otherwise those
// in changed. It counts the requests it sends.
func (p *Proxier) syncIPVS(want map[vsKey]*virtualServer, full bool, changed map[vsKey]bool) (int, error) {
	calls := 0
	sync := func(k vsKey) error {
		n, err := p.syncVirtualServer(k, want[k])
		calls += n
		return err
	}
	if !full {
		// Draining real servers are looked at on every sync: deleted once drained.
		for k := range p.draining {
			if !changed[k] {
				if err := sync(k); err != nil {
					return calls, err
				}
			}
		}
		for k := range changed {
			if err := sync(k); err != nil {
				return calls, err
			}
		}
		return calls, nil
	}
	for k := range want {
		if err := sync(k); err != nil {
			return calls, err
		}
	}
	for k := range p.applied {
		if want[k] == nil {
			if err := sync(k); err != nil {
				return calls, err
			}
		}
	}
	return calls, nil
}

// syncVirtualServer makes the virtual server k in IPVS equal w (nil: none): made or
// updated, real servers added, reweighted and removed, or deleted. It counts the requests
// it sends.
func (p *Proxier) syncVirtualServer(k vsKey, w *virtualServer) (int, error) {
	calls := 0
	have, ok := p.applied[k]
	if w == nil {
		if !ok {
			return 0, nil
		}
		if err := p.ipvs.DelService(toIPVS(have)); err != nil && !errors.Is(err, unix.ESRCH) && !errors.Is(err, unix.ENOENT) {
			return 0, fmt.Errorf("remove virtual server %s: %w", k, err)
		}
		delete(p.applied, k)
		delete(p.draining, k)
		return 1, nil
	}
	svc := toIPVS(w)
	switch {
	case !ok:
		if err := p.ipvs.NewService(svc); err != nil {
			return calls, fmt.Errorf("add virtual server %s (%s): %w", k, w.Service, err)
		}
		have = &virtualServer{Key: k, Scheduler: w.Scheduler, Persistent: w.Persistent, Fallback: w.Fallback, Dests: map[string]int{}}
		p.applied[k] = have
		calls++
	case have.Scheduler != w.Scheduler || have.Persistent != w.Persistent || have.Fallback != w.Fallback:
		if err := p.ipvs.UpdateService(svc); err != nil {
			return calls, fmt.Errorf("update virtual server %s (%s): %w", k, w.Service, err)
		}
		have.Scheduler, have.Persistent, have.Fallback = w.Scheduler, w.Persistent, w.Fallback
		calls++
	}
	have.Service = w.Service
	for d, weight := range w.Dests {
		cur, exists := have.Dests[d]
		if exists && cur == weight {
			continue
		}
		dst, err := toDest(d, weight)
		if err != nil {
			return calls, err
		}
		if exists {
			err = p.ipvs.UpdateDestination(svc, dst)
		} else {
			err = p.ipvs.NewDestination(svc, dst)
		}
		if err != nil {
			return calls, fmt.Errorf("real server %s of %s (%s): %w", d, k, w.Service, err)
		}
		have.Dests[d] = weight
		calls++
	}
	n, err := p.removeRealServers(svc, have, w)
	return calls + n, err
}

// removeRealServers removes the real servers of have that w does not want, with
// kube-proxy's graceful termination: a TCP real server still holding connections (active
// or not yet expired) gets weight 0, so it takes no new ones, and a later sync deletes it
// once they are gone; one without connections, UDP and SCTP ones (whose entries only
// expire) and those of the dh scheduler go at once.
func (p *Proxier) removeRealServers(svc *libipvs.Service, have, w *virtualServer) (int, error) {
	var stale []string
	for d := range have.Dests {
		if _, keep := w.Dests[d]; !keep {
			stale = append(stale, d)
		}
	}
	delete(p.draining, have.Key)
	if len(stale) == 0 {
		return 0, nil
	}
	conns := map[string]int{}
	// dh has no fallback: a client hashed to a weight-0 server would be refused.
	if have.Key.Proto == unix.IPPROTO_TCP && have.Scheduler != "dh" {
		dests, err := p.ipvs.GetDestinations(svc)
		if err != nil {
			return 0, fmt.Errorf("list real servers of %s: %w", have.Key, err)
		}
		for _, d := range dests {
			conns[net.JoinHostPort(d.Address.String(), strconv.Itoa(int(d.Port)))] = d.ActiveConnections + d.InactiveConnections
		}
	}
	calls := 0
	for _, d := range stale {
		dst, err := toDest(d, 0)
		if err != nil {
			return calls, err
		}
		if conns[d] > 0 {
			p.draining[have.Key] = true
			if have.Dests[d] == 0 {
				continue // already draining
			}
			if err := p.ipvs.UpdateDestination(svc, dst); err != nil {
				return calls, fmt.Errorf("drain real server %s of %s: %w", d, have.Key, err)
			}
			have.Dests[d] = 0
			calls++
			continue
		}
		if err := p.ipvs.DelDestination(svc, dst); err != nil && !errors.Is(err, unix.ENOENT) {
			return calls, fmt.Errorf("remove real server %s of %s: %w", d, have.Key, err)
		}
		delete(have.Dests, d)
		calls++
	}
	return calls, nil
}

// readIPVS reads the virtual servers that are ours (on an address of kube-ipvs0, a node
// address, or an address we want: kube-ipvs0 may have been deleted under them) with their
// real servers.
func (p *Proxier) readIPVS(bound map[string]bool, nodeIPs []net.IP, wanted map[string]bool) (map[vsKey]*virtualServer, error) {
	svcs, err := p.ipvs.GetServices()
	if err != nil {
		return nil, fmt.Errorf("list IPVS virtual servers: %w", err)
	}
	node := map[string]bool{}
	for _, ip := range nodeIPs {
		node[ip.String()] = true
	}
	out := map[vsKey]*virtualServer{}
	for _, s := range svcs {
		addr := s.Address.String()
		if s.Address == nil || s.FWMark != 0 || (!bound[addr] && !node[addr] && !wanted[addr]) {
			continue
		}
		k := vsKey{Proto: s.Protocol, IP: s.Address.String(), Port: s.Port}
		vs := &virtualServer{Key: k, Scheduler: s.SchedName, Dests: map[string]int{}}
		if s.Flags&flagPersistent != 0 {
			vs.Persistent = s.Timeout
		}
		vs.Fallback = s.Flags&flagFallback != 0
		dests, err := p.ipvs.GetDestinations(s)
		if err != nil {
			return nil, fmt.Errorf("list real servers of %s: %w", k, err)
		}
		for _, d := range dests {
			vs.Dests[net.JoinHostPort(d.Address.String(), strconv.Itoa(int(d.Port)))] = d.Weight
		}
		out[k] = vs
	}
	return out, nil
}

func toIPVS(vs *virtualServer) *libipvs.Service {
	s := &libipvs.Service{Address: net.ParseIP(vs.Key.IP).To4(), Protocol: vs.Key.Proto, Port: vs.Key.Port,
		SchedName: vs.Scheduler, AddressFamily: unix.AF_INET, Netmask: 0xffffffff}
	if vs.Persistent > 0 {
		s.Flags, s.Timeout = flagPersistent, vs.Persistent
	}
	if vs.Fallback {
		s.Flags |= flagFallback
	}
	return s
}

func toDest(hostPort string, weight int) (*libipvs.Destination, error) {
	h, ps, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("real server %s: %w", hostPort, err)
	}
	return &libipvs.Destination{Address: net.ParseIP(h).To4(), Port: uint16(port), Weight: weight,
		AddressFamily: unix.AF_INET, ConnectionFlags: libipvs.ConnectionFlagMasq}, nil
}

func host(ip string) *net.IPNet {
	return &net.IPNet{IP: net.ParseIP(ip).To4(), Mask: net.CIDRMask(32, 32)}
}

// ensureDummy makes kube-ipvs0 if missing. It stays down, as kube-proxy leaves it: the
// kernel still treats its addresses as local.
func ensureDummy() (link netlink.Link, created bool, err error) {
	l, err := netlink.LinkByName(DummyDevice)
	if err == nil {
		return l, false, nil
	}
	if !errors.As(err, new(netlink.LinkNotFoundError)) {
		return nil, false, fmt.Errorf("look up %s: %w", DummyDevice, err)
	}
	if err := netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: DummyDevice}}); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, false, fmt.Errorf("create dummy device %s (needs the dummy module): %w", DummyDevice, err)
	}
	l, err = netlink.LinkByName(DummyDevice)
	return l, true, err
}

func boundAddresses(dummy netlink.Link) (map[string]bool, error) {
	addrs, err := netlink.AddrList(dummy, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", DummyDevice, err)
	}
	out := map[string]bool{}
	for _, a := range addrs {
		out[a.IP.String()] = true
	}
	return out, nil
}

// nodeIPs are the addresses NodePorts answer on.
func (p *Proxier) nodeIPs(dummy netlink.Link) ([]net.IP, error) {
	if p.cfg.NodeIPs != nil {
		return p.cfg.NodeIPs()
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("node addresses: %w", err)
	}
	var out []net.IP
	for _, a := range addrs {
		if a.LinkIndex == dummy.Attrs().Index || a.IP.IsLoopback() || a.IP.IsLinkLocalUnicast() {
			continue
		}
		out = append(out, a.IP)
	}
	return out, nil
}

// sysctls kube-proxy sets in IPVS mode: conntrack for IPVS connections (masquerade needs
// it), expire connections to removed real servers and their persistence templates, and
// forwarding.
var sysctls = map[string]string{
	"net/ipv4/vs/conntrack":                 "1",
	"net/ipv4/vs/expire_nodest_conn":        "1",
	"net/ipv4/vs/expire_quiescent_template": "1",
	"net/ipv4/ip_forward":                   "1",
}

func ensureSysctls(cfg Config, log *slog.Logger) error {
	want := map[string]string{}
	for k, v := range sysctls {
		want[k] = v
	}
	if cfg.StrictARP {
		want["net/ipv4/conf/all/arp_ignore"] = "1"
		want["net/ipv4/conf/all/arp_announce"] = "2"
	}
	// Kernels before 5.9 stall reused connections to removed real servers by a second
	// unless conn_reuse_mode is 0; later ones fixed it, and 0 would break graceful rollouts.
	if old, err := kernelBefore(5, 9); err != nil {
		log.Warn("kernel version unknown; leaving net/ipv4/vs/conn_reuse_mode as it is", "err", err)
	} else if old {
		want["net/ipv4/vs/conn_reuse_mode"] = "0"
	}
	for k, v := range want {
		path := "/proc/sys/" + k
		cur, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("sysctl %s: %w", k, err)
		}
		if strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
			return fmt.Errorf("set sysctl %s=%s: %w", k, v, err)
		}
	}
	return nil
}

func kernelBefore(major, minor int) (bool, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false, err
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false, fmt.Errorf("kernel release %q: %w", unix.ByteSliceToString(u.Release[:]), err)
	}
	return ma < major || (ma == major && mi < minor), nil
}

// Cleanup removes what IPVS mode makes (miniproxy --cleanup): the jumps and our chains, the
// ip sets, every IPVS virtual server (as kube-proxy does) and kube-ipvs0. Each part missing
// (a kernel without IPVS, tables never written) is no error.
func Cleanup(ctx context.Context) error {
	var errs []error
	ipt, err := goipt.NewWithProtocol(goipt.ProtocolIPv4)
	if err != nil {
		return fmt.Errorf("iptables: %w", err)
	}
	for _, j := range jumps {
		if err := ipt.DeleteIfExists(j.table, j.chain, j.args()...); err != nil {
			errs = append(errs, fmt.Errorf("remove jump %s/%s -> %s: %w", j.table, j.chain, j.target, err))
		}
	}
	for table, chains := range map[string][]string{tablesNat: natChains, tablesFilter: filterChains} {
		for _, c := range chains {
			if ok, _ := ipt.ChainExists(table, c); ok {
				if err := ipt.ClearChain(table, c); err != nil {
					errs = append(errs, err)
				}
			}
		}
		for _, c := range chains {
			if ok, _ := ipt.ChainExists(table, c); ok {
				if err := ipt.DeleteChain(table, c); err != nil {
					errs = append(errs, fmt.Errorf("delete chain %s/%s: %w", table, c, err))
				}
			}
		}
	}
	if _, err := exec.LookPath("ipset"); err == nil {
		if err := ipset.Destroy(ctx, ipset.KubeSetNames()...); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat("/proc/net/ip_vs"); err == nil {
		h, err := libipvs.New("")
		if err != nil {
			errs = append(errs, err)
		} else {
			if err := h.Flush(); err != nil {
				errs = append(errs, fmt.Errorf("flush IPVS: %w", err))
			}
			h.Close()
		}
	}
	if l, err := netlink.LinkByName(DummyDevice); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", DummyDevice, err))
		}
	}
	return errors.Join(errs...)
}
