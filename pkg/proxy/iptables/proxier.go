package iptables

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	goipt "github.com/coreos/go-iptables/iptables"
	"github.com/minik8s/minik8s/pkg/proxy"
	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// serviceChain matches the per-service chains a sync may leave stale.
var serviceChain = regexp.MustCompile(`^KUBE-(SVC|SEP|EXT|SVL)-[A-Z2-7]{16}$`)

// jump is a rule in a built-in chain that sends traffic into ours.
type jump struct {
	table, chain, comment string
	match                 []string
	target                string
}

// jumps are kube-proxy's, inserted first in the built-in chains.
var jumps = []jump{
	{"filter", "INPUT", "kubernetes health check service ports", nil, kubeNodePorts},
	{"filter", "INPUT", "kubernetes externally-visible service portals", []string{"-m", "conntrack", "--ctstate", "NEW"}, kubeExternalServices},
	{"filter", "FORWARD", "kubernetes externally-visible service portals", []string{"-m", "conntrack", "--ctstate", "NEW"}, kubeExternalServices},
	{"filter", "OUTPUT", "kubernetes service portals", []string{"-m", "conntrack", "--ctstate", "NEW"}, kubeServices},
	{"filter", "FORWARD", "kubernetes service portals", []string{"-m", "conntrack", "--ctstate", "NEW"}, kubeServices},
	{"filter", "FORWARD", "kubernetes forwarding rules", nil, kubeForward},
	{"filter", "INPUT", "kubernetes load balancer firewall", []string{"-m", "conntrack", "--ctstate", "NEW"}, kubeProxyFirewall},
	{"filter", "OUTPUT", "kubernetes load balancer firewall", []string{"-m", "conntrack", "--ctstate", "NEW"}, kubeProxyFirewall},
	{"filter", "FORWARD", "kubernetes load balancer firewall", []string{"-m", "conntrack", "--ctstate", "NEW"}, kubeProxyFirewall},
	{"nat", "OUTPUT", "kubernetes service portals", nil, kubeServices},
	{"nat", "PREROUTING", "kubernetes service portals", nil, kubeServices},
	{"nat", "POSTROUTING", "kubernetes postrouting rules", nil, kubePostrouting},
}

func (j jump) rule() []string {
	return append(append([]string{"-m", "comment", "--comment", j.comment}, j.match...), "-j", j.target)
}

// SyncResult says what one sync did, for metrics and logs.
type SyncResult struct {
	Full          bool
	Duration      time.Duration
	FilterRules   int
	NATRules      int
	ChainsWritten int
	RestoreBytes  int
	ServicePorts  int
}

// Proxier keeps the kernel's rules equal to the Services and EndpointSlices it reads.
type Proxier struct {
	cfg      Config
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	nodeName string
	log      *slog.Logger
	ipt      *goipt.IPTables

	mu       sync.Mutex
	written  map[string]string // per-service nat chain -> its rules as last written
	needFull bool
	udp      map[string]udpState // UDP service port -> what conntrack cleanup compares
}

type udpState struct {
	dsts []string // cluster IP, external and load balancer IPs
	node int32
	eps  map[string]bool
}

// New makes a proxier; the first Sync is a full one.
func New(cfg Config, services corelisters.ServiceLister, slices discoverylisters.EndpointSliceLister, nodeName string, log *slog.Logger) (*Proxier, error) {
	ipt, err := goipt.NewWithProtocol(goipt.ProtocolIPv4)
	if err != nil {
		return nil, fmt.Errorf("iptables: %w (Debian package iptables)", err)
	}
	return &Proxier{cfg: cfg, services: services, slices: slices, nodeName: nodeName, log: log, ipt: ipt,
		written: map[string]string{}, needFull: true, udp: map[string]udpState{}}, nil
}

// ForceFull makes the next Sync a full one (the periodic resync).
func (p *Proxier) ForceFull() {
	p.mu.Lock()
	p.needFull = true
	p.mu.Unlock()
}

// Sync writes the rules: everything on a full sync, otherwise only the per-service chains
// that changed (kube-proxy's partial sync); a failed partial sync is retried in full.
func (p *Proxier) Sync(ctx context.Context) (SyncResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := time.Now()
	if err := p.ensureBase(); err != nil {
		return SyncResult{}, err
	}
	ports, err := proxy.Snapshot(p.services, p.slices, p.nodeName)
	if err != nil {
		return SyncResult{}, err
	}
	rs := buildRules(p.cfg, ports)
	res, err := p.write(ctx, rs, p.needFull)
	if err != nil && !res.Full {
		p.log.Warn("partial sync failed, doing a full one", "err", err)
		res, err = p.write(ctx, rs, true)
	}
	if err != nil {
		p.needFull = true
		return res, err
	}
	p.needFull = false
	p.cleanConntrack(ctx, ports)
	res.ServicePorts = len(ports)
	res.Duration = time.Since(start)
	return res, nil
}

// ensureBase makes our chains, the jumps into them, and the canary: a flush of the tables
// by someone else removes the canary, and the next sync is then a full one.
func (p *Proxier) ensureBase() error {
	exists, err := p.ipt.ChainExists("mangle", kubeProxyCanary)
	if err != nil {
		return fmt.Errorf("iptables: %w", err)
	}
	if !exists {
		if !p.needFull {
			p.log.Warn("canary chain gone: the tables were flushed by someone else; resyncing in full")
		}
		p.needFull = true
		if err := p.ipt.NewChain("mangle", kubeProxyCanary); err != nil {
			return fmt.Errorf("create canary chain: %w", err)
		}
	}
	for _, j := range jumps {
		if ok, err := p.ipt.ChainExists(j.table, j.target); err != nil {
			return err
		} else if !ok {
			if err := p.ipt.NewChain(j.table, j.target); err != nil {
				return fmt.Errorf("create chain %s/%s: %w", j.table, j.target, err)
			}
		}
		if err := p.ipt.InsertUnique(j.table, j.chain, 1, j.rule()...); err != nil {
			return fmt.Errorf("jump from %s/%s to %s: %w", j.table, j.chain, j.target, err)
		}
	}
	if ok, _ := p.ipt.ChainExists("nat", kubeMarkMasq); !ok {
		if err := p.ipt.NewChain("nat", kubeMarkMasq); err != nil {
			return err
		}
	}
	return nil
}

// write builds the iptables-restore input and runs it once.
func (p *Proxier) write(ctx context.Context, rs ruleSet, full bool) (SyncResult, error) {
	res := SyncResult{Full: full, FilterRules: rs.filter.rules(), NATRules: rs.nat.rules()}
	stale := map[string]bool{}
	if full {
		existing, err := p.existingServiceChains(ctx)
		if err != nil {
			return res, err
		}
		for _, c := range existing {
			stale[c] = true
		}
	} else {
		for c := range p.written {
			stale[c] = true
		}
	}
	var buf bytes.Buffer
	writeTable(&buf, rs.filter, nil, nil)
	newWritten := map[string]string{}
	skip := map[string]bool{}
	for _, c := range rs.nat.order {
		if !serviceChain.MatchString(c) {
			continue
		}
		delete(stale, c)
		text := strings.Join(rs.nat.chains[c], "\n")
		newWritten[c] = text
		if !full && p.written[c] == text {
			skip[c] = true
		}
	}
	var staleList []string
	for c := range stale {
		staleList = append(staleList, c)
	}
	writeTable(&buf, rs.nat, skip, staleList)
	res.ChainsWritten = len(rs.filter.order) + len(rs.nat.order) - len(skip)
	res.RestoreBytes = buf.Len()
	cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5", "--noflush")
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		return res, fmt.Errorf("iptables-restore: %w: %s", err, strings.TrimSpace(string(out)))
	}
	p.written = newWritten
	return res, nil
}

// writeTable writes one table: every chain declared (which flushes it) with its rules,
// except the skipped ones, then the stale chains flushed and deleted.
func writeTable(buf *bytes.Buffer, t *table, skip map[string]bool, stale []string) {
	fmt.Fprintf(buf, "*%s\n", t.name)
	for _, c := range t.order {
		if !skip[c] {
			fmt.Fprintf(buf, ":%s - [0:0]\n", c)
		}
	}
	for _, c := range stale {
		fmt.Fprintf(buf, ":%s - [0:0]\n", c)
	}
	for _, c := range t.order {
		if skip[c] {
			continue
		}
		for _, r := range t.chains[c] {
			buf.WriteString(r)
			buf.WriteByte('\n')
		}
	}
	for _, c := range stale {
		fmt.Fprintf(buf, "-X %s\n", c)
	}
	buf.WriteString("COMMIT\n")
}

// existingServiceChains lists the per-service chains the nat table holds now.
func (p *Proxier) existingServiceChains(ctx context.Context) ([]string, error) {
	chains, err := listChains(ctx, "nat")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range chains {
		if serviceChain.MatchString(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// listChains reads the chain names of a table from iptables-save.
func listChains(ctx context.Context, table string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "iptables-save", "-t", table).Output()
	if err != nil {
		return nil, fmt.Errorf("iptables-save -t %s: %w", table, err)
	}
	var chains []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, ":") {
			chains = append(chains, strings.Fields(line[1:])[0])
		}
	}
	return chains, sc.Err()
}

// Cleanup removes every jump, chain and rule the proxier makes (miniproxy --cleanup).
func Cleanup(ctx context.Context) error {
	ipt, err := goipt.NewWithProtocol(goipt.ProtocolIPv4)
	if err != nil {
		return err
	}
	for _, j := range jumps {
		if err := ipt.DeleteIfExists(j.table, j.chain, j.rule()...); err != nil {
			return fmt.Errorf("remove jump from %s/%s: %w", j.table, j.chain, err)
		}
	}
	for _, table := range []string{"nat", "filter"} {
		chains, err := listChains(ctx, table)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		var ours []string
		for _, c := range chains {
			if strings.HasPrefix(c, "KUBE-") {
				ours = append(ours, c)
			}
		}
		if len(ours) == 0 {
			continue
		}
		fmt.Fprintf(&buf, "*%s\n", table)
		for _, c := range ours {
			fmt.Fprintf(&buf, ":%s - [0:0]\n", c)
		}
		for _, c := range ours {
			fmt.Fprintf(&buf, "-X %s\n", c)
		}
		buf.WriteString("COMMIT\n")
		cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5", "--noflush")
		cmd.Stdin = &buf
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("iptables-restore (cleanup of %s): %w: %s", table, err, out)
		}
	}
	if ok, _ := ipt.ChainExists("mangle", kubeProxyCanary); ok {
		return ipt.ClearAndDeleteChain("mangle", kubeProxyCanary)
	}
	return nil
}

// cleanConntrack deletes the UDP conntrack entries that would keep sending packets where
// they no longer should: to an endpoint that went away, or (cached before a service had
// any endpoint) to nowhere. TCP needs none of this: its connections reset.
func (p *Proxier) cleanConntrack(ctx context.Context, ports []proxy.ServicePort) {
	seen := map[string]bool{}
	for i := range ports {
		sp := &ports[i]
		if sp.Protocol != corev1.ProtocolUDP {
			continue
		}
		seen[sp.Name] = true
		cur := udpState{dsts: append(append([]string{sp.ClusterIP}, sp.ExternalIPs...), sp.LoadBalancerIPs...), node: sp.NodePort, eps: map[string]bool{}}
		for _, e := range sp.Usable(false) {
			cur.eps[e.IP] = true
		}
		prev, known := p.udp[sp.Name]
		p.udp[sp.Name] = cur
		if !known {
			continue
		}
		if len(prev.eps) == 0 && len(cur.eps) > 0 {
			for _, dst := range cur.dsts {
				p.conntrack(ctx, "-D", "-p", "udp", "--orig-dst", dst)
			}
			if cur.node != 0 {
				p.conntrack(ctx, "-D", "-p", "udp", "--orig-port-dst", fmt.Sprint(cur.node))
			}
		}
		for ip := range prev.eps {
			if cur.eps[ip] {
				continue
			}
			for _, dst := range prev.dsts {
				p.conntrack(ctx, "-D", "-p", "udp", "--orig-dst", dst, "--dst-nat", ip)
			}
			if prev.node != 0 {
				p.conntrack(ctx, "-D", "-p", "udp", "--orig-port-dst", fmt.Sprint(prev.node), "--dst-nat", ip)
			}
		}
	}
	for name := range p.udp {
		if !seen[name] {
			delete(p.udp, name)
		}
	}
}

// conntrack runs the conntrack tool; "0 flow entries" (exit 1) is no error.
func (p *Proxier) conntrack(ctx context.Context, args ...string) {
	out, err := exec.CommandContext(ctx, "conntrack", args...).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "0 flow entries") {
		p.log.Warn("conntrack cleanup failed", "args", strings.Join(args, " "), "err", err, "output", strings.TrimSpace(string(out)))
	}
}
