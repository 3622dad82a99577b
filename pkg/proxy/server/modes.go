package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	goipt "github.com/coreos/go-iptables/iptables"
	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/iptables"
	"github.com/minik8s/minik8s/pkg/proxy/ipvs"
	"github.com/vishvananda/netlink"
)

// Proxy modes, by kube-proxy's --proxy-mode names.
const (
	ModeIPTables = "iptables"
	ModeIPVS     = "ipvs"
)

// iptablesFullSyncPeriod is how often the iptables mode rewrites every chain, as
// kube-proxy's (FullSyncPeriod, one hour since 1.28): the --sync-period syncs in between
// are partial ones, which check the canary, so a flush of the tables is still noticed
// and repaired within a sync period. A full sync costs seconds of iptables-restore at 10 000 Services and
// resets every rule's packet counters, which users read.
const iptablesFullSyncPeriod = time.Hour

// fullSyncPeriod is how often a mode's periodic sync is a full one: the IPVS mode reads
// the kernel back on every --sync-period (its full sync repairs virtual servers deleted
// behind its back).
func fullSyncPeriod(o Options) time.Duration {
	if o.ProxyMode == ModeIPVS {
		return o.SyncPeriod
	}
	return max(o.SyncPeriod, iptablesFullSyncPeriod)
}

// syncResult is what the server needs from one sync of either mode.
type syncResult struct {
	full                  bool
	partialFailed         bool // a partial sync failed, and this one is the full one after it
	duration              time.Duration
	filterRules, natRules int
	// service ports whose Local internal or external traffic policy finds no endpoint here
	// but some elsewhere
	noLocalInternal, noLocalExternal int
	log                              []any // mode-specific figures for the debug log
}

// proxier is a mode's proxier as the server drives it.
type proxier interface {
	Sync(context.Context) (syncResult, error)
	ForceFull()
	// Changed is told every Service and EndpointSlice event (old and new object of an
	// update) before the sync it asks for.
	Changed(obj any)
	// SetNode is told what the service ports read of this node's Node whenever it is read;
	// changed: it differs from the one before, so a sync is due.
	SetNode(n proxy.NodeFacts) (changed bool)
}

func newProxier(o Options, src proxy.Source, log *slog.Logger) (proxier, error) {
	switch o.ProxyMode {
	case ModeIPTables, "":
		p, err := iptables.NewOn(iptables.Config{ClusterCIDR: o.ClusterCIDR, MasqueradeAll: o.MasqueradeAll}, src, o.HostnameOverride, log)
		return iptablesMode{p}, err
	case ModeIPVS:
		p, err := ipvs.NewOn(o.ipvsConfig(), src, o.HostnameOverride, log)
		return ipvsMode{p}, err
	}
	return nil, fmt.Errorf("--proxy-mode %q: want %q or %q", o.ProxyMode, ModeIPTables, ModeIPVS)
}

// cleanupOtherMode removes what the other mode left on this node (miniproxy ran in it
// before), as kube-proxy does when a node changes modes: the iptables mode's per-service
// chains would otherwise still reject or redirect Service traffic under IPVS, and IPVS
// would still answer on kube-ipvs0's addresses under iptables. Each mode's own trace says
// whether it ran: the iptables mode's canary chain, the IPVS mode's dummy device.
func cleanupOtherMode(ctx context.Context, mode string, log *slog.Logger) error {
	switch mode {
	case ModeIPVS:
		ipt, err := goipt.NewWithProtocol(goipt.ProtocolIPv4)
		if err != nil {
			return fmt.Errorf("iptables: %w", err)
		}
		if ok, err := ipt.ChainExists("mangle", "KUBE-PROXY-CANARY"); err != nil || !ok {
			return err
		}
		log.Info("removing the iptables mode's rules left on this node")
		return iptables.Cleanup(ctx)
	case ModeIPTables, "":
		if _, err := netlink.LinkByName(ipvs.DummyDevice); err != nil {
			return nil
		}
		log.Info("removing the IPVS mode's virtual servers, sets and rules left on this node")
		return ipvs.Cleanup(ctx)
	}
	return nil
}

// IPVSOptions are the --ipvs-* flags.
type IPVSOptions struct {
	Scheduler                             string
	TCPTimeout, TCPFinTimeout, UDPTimeout time.Duration
	StrictARP                             bool
}

func (o *Options) ipvsConfig() ipvs.Config {
	return ipvs.Config{Scheduler: o.IPVS.Scheduler, ClusterCIDR: o.ClusterCIDR, MasqueradeAll: o.MasqueradeAll,
		TCPTimeout: o.IPVS.TCPTimeout, TCPFinTimeout: o.IPVS.TCPFinTimeout, UDPTimeout: o.IPVS.UDPTimeout, StrictARP: o.IPVS.StrictARP}
}

type iptablesMode struct{ *iptables.Proxier }

func (m iptablesMode) Sync(ctx context.Context) (syncResult, error) {
	res, err := m.Proxier.Sync(ctx)
	return syncResult{full: res.Full, partialFailed: res.PartialFailed, duration: res.Duration, filterRules: res.FilterRules, natRules: res.NATRules,
		noLocalInternal: res.NoLocalInternal, noLocalExternal: res.NoLocalExternal,
		log: []any{"servicePorts", res.ServicePorts, "chainsWritten", res.ChainsWritten, "bytes", res.RestoreBytes}}, err
}

type ipvsMode struct{ *ipvs.Proxier }

func (m ipvsMode) Sync(ctx context.Context) (syncResult, error) {
	res, err := m.Proxier.Sync(ctx)
	return syncResult{full: res.Full, duration: res.Duration, filterRules: res.FilterRules, natRules: res.NATRules,
		noLocalInternal: res.NoLocalInternal, noLocalExternal: res.NoLocalExternal,
		log: []any{"servicePorts", res.ServicePorts, "virtualServers", res.VirtualServers, "realServers", res.RealServers,
			"ipvsCalls", res.IPVSCalls, "ipsetLines", res.SetLines, "rulesWritten", res.RulesWritten}}, err
}
