package iptables

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	goipt "github.com/coreos/go-iptables/iptables"
	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/conntrack"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// serviceChain matches the per-service chains a sync may leave stale.
var serviceChain = regexp.MustCompile(`^KUBE-(SVC|SEP|EXT|SVL|FW)-[A-Z2-7]{16}$`)

// canaryTables hold the empty chain KUBE-PROXY-CANARY, made by a full sync: gone from
// one, that table was wiped behind our back (kube-proxy's iptables Monitor watches the
// same three).
var canaryTables = []string{"mangle", "nat", "filter"}

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
	// As kube-proxy's duplicates of the kubelet's jumps: no comment, first in the chain.
	{"filter", "INPUT", "", nil, kubeletFirewall},
	{"filter", "OUTPUT", "", nil, kubeletFirewall},
}

func (j jump) rule() []string {
	var r []string
	if j.comment != "" {
		r = []string{"-m", "comment", "--comment", j.comment}
	}
	return append(append(r, j.match...), "-j", j.target)
}

// routeLocalnet is the sysctl that lets packets to 127.0.0.0/8, DNATed to an endpoint
// elsewhere, leave the loopback device: kube-proxy sets it for NodePorts on localhost
// (--iptables-localhost-nodeports, on by default, as here).
const routeLocalnet = "/proc/sys/net/ipv4/conf/all/route_localnet"

// SyncResult says what one sync did, for metrics and logs.
type SyncResult struct {
	Full bool
	// PartialFailed: a partial sync failed first, and this is the full one that followed
	// (kube-proxy's partial restore failures).
	PartialFailed bool
	Duration      time.Duration
	FilterRules   int
	NATRules      int
	ChainsWritten int
	RestoreBytes  int
	RestoreLines  int
	ServicePorts  int
	// BuildDuration is reading the listers and laying out the rules; RestoreDuration the
	// iptables-restore run, RestoreCPU its user+system CPU time (apart from other load).
	BuildDuration, RestoreDuration, RestoreCPU time.Duration
	// NoLocalInternal, NoLocalExternal: service ports whose Local traffic policy finds no
	// endpoint here but some elsewhere (proxy.ServicePort.NoLocalEndpoints).
	NoLocalInternal, NoLocalExternal int
}

// Proxier keeps the kernel's rules equal to the Services and EndpointSlices it reads.
type Proxier struct {
	cfg Config
	log *slog.Logger
	ipt *goipt.IPTables

	// wholeCache: iptables-restore is nft-backed (see tablePlan.writeTo).
	wholeCache bool

	mu       sync.Mutex
	needFull bool
	builder  *builder           // remembers the last layout, so a partial sync lays out only changes
	snap     *proxy.Snapshotter // remembers the last snapshot and is told what changed
}

// New makes a proxier; the first Sync is a full one. Feed it the informers' events
// (Changed): partial syncs read only the Services they name.
// It reads API objects through listers; NewOn reads records.
func New(cfg Config, services corelisters.ServiceLister, slices discoverylisters.EndpointSliceLister, nodeName string, log *slog.Logger) (*Proxier, error) {
	return NewOn(cfg, proxy.Listers(services, slices), nodeName, log)
}

// NewOn is New reading src (miniproxy: its informers' records, proxy.Records).
func NewOn(cfg Config, src proxy.Source, nodeName string, log *slog.Logger) (*Proxier, error) {
	ipt, err := goipt.NewWithProtocol(goipt.ProtocolIPv4)
	if err != nil {
		return nil, fmt.Errorf("iptables: %w (Debian package iptables)", err)
	}
	if err := os.WriteFile(routeLocalnet, []byte("1"), 0o644); err != nil {
		return nil, fmt.Errorf("allow NodePorts on localhost (net.ipv4.conf.all.route_localnet=1): %w", err)
	}
	return &Proxier{cfg: cfg, log: log, ipt: ipt,
		wholeCache: nftBacked(), needFull: true,
		snap: &proxy.Snapshotter{Source: src, NodeName: nodeName}}, nil
}

// Changed notes the Service (or EndpointSlice, or a deleted one's tombstone) an informer
// event is about (for an update, call it with the old and the new object): a partial sync
// reads again only the Services so named, as kube-proxy's change trackers. Call it before
// asking for the sync the event needs.
func (p *Proxier) Changed(obj any) { p.snap.Mark(obj) }

// SetNode says what the service ports read of this node's Node (its zone label and
// address): a change makes the next Sync a full one.
func (p *Proxier) SetNode(n proxy.NodeFacts) (changed bool) { return p.snap.SetNode(n) }

// nftBacked says whether iptables-restore is iptables-nft ("iptables v1.8.9 (nf_tables)").
func nftBacked() bool {
	out, err := exec.Command("iptables-restore", "--version").CombinedOutput()
	return err == nil && strings.Contains(string(out), "nf_tables")
}

// ForceFull makes the next Sync a full one (the periodic resync).
func (p *Proxier) ForceFull() {
	p.mu.Lock()
	p.needFull = true
	p.mu.Unlock()
}

// Sync writes the rules: everything on a full sync; otherwise only the chains of the
// Services that changed since the last sync, and the top-level chains whose lines changed
// (kube-proxy's partial sync, KEP-3453). A failed partial sync is retried in full.
func (p *Proxier) Sync(ctx context.Context) (SyncResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := time.Now()
	partialFailed := false
	if !p.needFull && p.snap.Ready() {
		res, err := p.partial(ctx, start)
		if err == nil {
			return res, nil
		}
		p.log.Warn("partial sync failed (the canary chain is gone when someone flushed the tables), doing a full one", "err", err)
		partialFailed = true
	}
	p.needFull = true
	// A full sync reads and lays out everything anew, trusting no memory of earlier ones.
	p.snap.Forget()
	p.builder = &builder{cfg: p.cfg}
	ports, err := p.snap.Snapshot()
	if err != nil {
		return SyncResult{PartialFailed: partialFailed}, err
	}
	rs := p.builder.build(ports)
	built := time.Since(start)
	res, err := p.write(ctx, rs, [2][]string{}, true)
	res.PartialFailed = partialFailed
	if err != nil {
		return res, err
	}
	p.needFull = false
	p.cleanConntrack(ports)
	return p.finish(res, start, built), nil
}

// partial writes the changes the informers named since the last sync.
func (p *Proxier) partial(ctx context.Context, start time.Time) (SyncResult, error) {
	changes, err := p.snap.Changes()
	if err != nil {
		return SyncResult{}, err
	}
	rs, stale := p.builder.update(changes)
	built := time.Since(start)
	res, err := p.write(ctx, rs, stale, false)
	if err != nil {
		return res, err
	}
	var ports []proxy.ServicePort
	for _, c := range changes {
		ports = append(ports, c.After...)
	}
	p.cleanConntrack(ports)
	return p.finish(res, start, built), nil
}

// cleanConntrack deletes the stale UDP flows of ports (those a sync changed; all of them
// after a full sync), as kube-proxy does.
func (p *Proxier) cleanConntrack(ports []proxy.ServicePort) {
	if n, err := conntrack.CleanStaleUDP(ports); err != nil {
		p.log.Warn("conntrack cleanup failed", "err", err)
	} else if n > 0 {
		p.log.Debug("deleted stale UDP conntrack entries", "entries", n)
	}
}

func (p *Proxier) finish(res SyncResult, start time.Time, built time.Duration) SyncResult {
	res.FilterRules, res.NATRules = p.builder.totalRules(0), p.builder.totalRules(1)
	res.ServicePorts = len(p.builder.ports)
	res.NoLocalInternal, res.NoLocalExternal = p.builder.noLocal[0], p.builder.noLocal[1]
	res.BuildDuration = built
	res.Duration = time.Since(start)
	return res
}

// ensureBase makes the canary, our top-level chains and the jumps into them from the
// built-in chains, on a full sync; saved is what the tables hold now, so a sync where all
// of it is in place runs no extra command.
func (p *Proxier) ensureBase(saved map[string]*savedTable) error {
	for _, table := range canaryTables {
		if ok, err := p.ipt.ChainExists(table, kubeProxyCanary); err != nil {
			return fmt.Errorf("iptables: %w", err)
		} else if !ok {
			if err := p.ipt.NewChain(table, kubeProxyCanary); err != nil {
				return fmt.Errorf("create canary chain in %s: %w", table, err)
			}
		}
	}
	for _, j := range jumps {
		t := saved[j.table]
		if !t.chains[j.target] {
			if err := p.ipt.NewChain(j.table, j.target); err != nil {
				return fmt.Errorf("create chain %s/%s: %w", j.table, j.target, err)
			}
			t.chains[j.target] = true
		}
		if t.hasRule(j.chain, j.rule()) {
			continue
		}
		if err := p.ipt.InsertUnique(j.table, j.chain, 1, j.rule()...); err != nil {
			return fmt.Errorf("jump from %s/%s to %s: %w", j.table, j.chain, j.target, err)
		}
	}
	return nil
}

// savedTable is a table as iptables-save printed it: its chains and rules.
type savedTable struct {
	chains map[string]bool
	rules  map[string]bool // "-A CHAIN ..." lines
}

// hasRule says whether chain holds rule, comparing as iptables-save prints it.
func (t *savedTable) hasRule(chain string, rule []string) bool {
	args := make([]string, len(rule))
	for i, a := range rule {
		if strings.ContainsAny(a, " ") {
			a = `"` + a + `"`
		}
		args[i] = a
	}
	return t.rules["-A "+chain+" "+strings.Join(args, " ")]
}

// readTables reads what the filter and nat tables hold now.
func readTables(ctx context.Context) (map[string]*savedTable, error) {
	out := map[string]*savedTable{}
	for _, table := range []string{"filter", "nat"} {
		cmd := exec.CommandContext(ctx, "iptables-save", "-t", table)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("iptables-save -t %s: %w", table, err)
		}
		// Read as it comes: the nat table is 12 MB of text at 10 000 services.
		t := &savedTable{chains: map[string]bool{}, rules: map[string]bool{}}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ":"):
				t.chains[strings.Fields(line[1:])[0]] = true
			case strings.HasPrefix(line, "-A ") && !strings.HasPrefix(line, "-A KUBE-"):
				t.rules[line] = true // only built-in chains' rules matter here
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			return nil, fmt.Errorf("iptables-save -t %s: %w: %s", table, err, strings.TrimSpace(stderr.String()))
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("iptables-save -t %s: %w", table, err)
		}
		out[table] = t
	}
	return out, nil
}

// write builds the iptables-restore input and runs it once. A full write declares (and so
// flushes and refills) every chain of ours and deletes the per-service chains the kernel
// holds that are not wanted; a partial one writes the chains rs holds (those that changed)
// and deletes stale, so unchanged chains keep their packet counters and an endpoint change
// costs a few chains, not the whole table.
func (p *Proxier) write(ctx context.Context, rs ruleSet, stale [2][]string, full bool) (SyncResult, error) {
	res := SyncResult{Full: full}
	tables := [2]*table{rs.filter, rs.nat}
	var plan [2]tablePlan
	for i, t := range tables {
		plan[i] = tablePlan{t: t, write: t.order, stale: stale[i]}
	}
	if full {
		saved, err := readTables(ctx)
		if err != nil {
			return res, err
		}
		if err := p.ensureBase(saved); err != nil {
			return res, err
		}
		for c := range saved["nat"].chains {
			if _, want := rs.nat.chains[c]; !want && serviceChain.MatchString(c) {
				plan[1].stale = append(plan[1].stale, c)
			}
		}
	}
	sort.Strings(plan[1].stale)
	// The input is streamed into iptables-restore as it is written: at 10 000 services it
	// is 12 MB the proxier then never holds as one buffer.
	start := time.Now()
	cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5", "--noflush")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return res, err
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("iptables-restore: %w", err)
	}
	counted := &countingWriter{w: stdin}
	buf := bufio.NewWriterSize(counted, 64<<10)
	if !full {
		// The canaries, checked inside the same restore: when someone wiped a table its
		// canary is gone, listing it fails the whole restore, and the sync is redone in full.
		for _, table := range canaryTables {
			buf.WriteString("*" + table + "\n-S " + kubeProxyCanary + "\nCOMMIT\n")
			res.RestoreLines += 3
		}
	}
	for _, tp := range plan {
		res.ChainsWritten += len(tp.write)
		res.RestoreLines += tp.writeTo(buf, p.wholeCache)
	}
	_ = buf.Flush() // a write error means iptables-restore quit: Wait says why
	stdin.Close()
	err = cmd.Wait()
	res.RestoreBytes = counted.n
	res.RestoreDuration = time.Since(start)
	if cmd.ProcessState != nil {
		res.RestoreCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return res, fmt.Errorf("iptables-restore: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return res, nil
}

// countingWriter counts what passes to w.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// tablePlan is what one restore writes of a table: the chains to (re)write, the stale ones
// to delete.
type tablePlan struct {
	t     *table
	write []string
	stale []string
}

// manyChains is where the nft backend's per-chain cost takes over (see writeTo).
const manyChains = 500

// writeTo writes the plan as iptables-restore input and returns its line count. A declared
// chain is flushed (we own it) and refilled; a stale one flushed and deleted. wholeCache
// says iptables-restore is nft-backed: iptables-nft 1.8.x keeps the chains a restore names
// in a sorted linked list (one strcmp walk per rule), quadratic in the chains written (a
// 10 000-service table took 8 minutes here). A table-wide read-only command ("-S") makes it
// cache the whole table once instead, so a restore writing many chains starts with one.
func (tp *tablePlan) writeTo(buf *bufio.Writer, wholeCache bool) int {
	if len(tp.write) == 0 && len(tp.stale) == 0 {
		return 0
	}
	lines := 2
	buf.WriteString("*" + tp.t.name + "\n")
	if wholeCache && len(tp.write)+len(tp.stale) > manyChains {
		buf.WriteString("-S\n")
		lines++
	}
	for _, list := range [][]string{tp.write, tp.stale} {
		for _, c := range list {
			buf.WriteString(":" + c + " - [0:0]\n")
		}
		lines += len(list)
	}
	for _, c := range tp.write {
		buf.Write(tp.t.chains[c].text)
		lines += tp.t.chains[c].rules
	}
	for _, c := range tp.stale {
		buf.WriteString("-X " + c + "\n")
	}
	buf.WriteString("COMMIT\n")
	return lines + len(tp.stale)
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
		tp := tablePlan{t: newTable(table)}
		for _, c := range chains {
			if strings.HasPrefix(c, "KUBE-") {
				tp.stale = append(tp.stale, c)
			}
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if tp.writeTo(w, nftBacked()) == 0 {
			continue
		}
		_ = w.Flush()
		cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5", "--noflush")
		cmd.Stdin = &buf
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("iptables-restore (cleanup of %s): %w: %s", table, err, strings.TrimSpace(stderr.String()))
		}
	}
	if ok, _ := ipt.ChainExists("mangle", kubeProxyCanary); ok {
		return ipt.ClearAndDeleteChain("mangle", kubeProxyCanary)
	}
	return nil
}
