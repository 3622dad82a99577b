package server

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/netnstest"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/proxy/iptables"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

func TestValidateProxyModes(t *testing.T) {
	base := Options{HostnameOverride: "n", MinSyncPeriod: time.Second, SyncPeriod: 30 * time.Second}
	for _, c := range []struct {
		mode, sched, wantErr string
	}{
		{"iptables", "", ""},
		{"ipvs", "", ""},
		{"ipvs", "sh", ""},
		{"ipvs", "fastest", `--ipvs-scheduler "fastest"`},
		{"iptables", "rr", "only used with --proxy-mode ipvs"},
		{"ipvs", "rr", ""},
		{"nftables", "", `--proxy-mode "nftables"`},
	} {
		o := base
		o.ProxyMode, o.IPVS.Scheduler = c.mode, c.sched
		err := o.Validate()
		if c.mode == "ipvs" && c.sched == "rr" {
			o.IPVS.TCPTimeout = time.Millisecond
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--ipvs-tcp-timeout") {
				t.Errorf("--ipvs-tcp-timeout 1ms: %v", err)
			}
		}
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("mode %q scheduler %q: %v, want %q", c.mode, c.sched, err, c.wantErr)
		}
	}
}

func TestValidateLBInterfaces(t *testing.T) {
	base := Options{HostnameOverride: "n", MinSyncPeriod: time.Second, SyncPeriod: 30 * time.Second,
		HealthzAddress: "0.0.0.0:10256", LBInterfaces: []string{"eth0"}}
	for _, c := range []struct {
		name    string
		change  func(*Options)
		wantErr string
	}{
		{"iptables mode", func(*Options) {}, ""},
		{"no healthz to probe", func(o *Options) { o.HealthzAddress = "" }, "--lb-interfaces needs --healthz-bind-address"},
		{"IPVS without strict ARP", func(o *Options) { o.ProxyMode = ModeIPVS }, "--ipvs-strict-arp"},
		{"IPVS with strict ARP", func(o *Options) { o.ProxyMode, o.IPVS.StrictARP = ModeIPVS, true }, ""},
	} {
		o := base
		c.change(&o)
		err := o.Validate()
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
		}
	}
}

// TestSwitchingToIPVSRemovesTheIPTablesModesRules: in a network namespace made for the test,
// the iptables mode syncs (empty cluster: its base chains and canary), then starting in IPVS
// mode removes them; starting in iptables mode again leaves them alone.
func TestSwitchingToIPVSRemovesTheIPTablesModesRules(t *testing.T) {
	testenv.RequireRoot(t, "creates a network namespace with iptables chains in it")
	testenv.RequireTools(t, "iptables", "iptables-restore", "iptables-save")
	netnstest.Enter(t) // programs run from here inherit the test's namespace
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	p, err := iptables.New(iptables.Config{}, corelisters.NewServiceLister(idx()), discoverylisters.NewEndpointSliceLister(idx()), "n", log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	save := func() string {
		out, err := exec.Command("iptables-save").CombinedOutput()
		if err != nil {
			t.Fatalf("iptables-save: %v: %s", err, out)
		}
		return string(out)
	}
	if err := cleanupOtherMode(ctx, ModeIPTables, log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(save(), ":KUBE-PROXY-CANARY") {
		t.Fatal("starting in iptables mode removed the iptables mode's own chains")
	}
	if err := cleanupOtherMode(ctx, ModeIPVS, log); err != nil {
		t.Fatal(err)
	}
	if out := save(); strings.Contains(out, "KUBE-") {
		t.Errorf("the iptables mode's chains are left after starting in IPVS mode:\n%s", out)
	}
}

// The iptables mode's periodic sync is partial and its full one hourly, as kube-proxy's;
// IPVS mode's periodic sync is full.
func TestFullSyncPeriod(t *testing.T) {
	for _, c := range []struct {
		mode       string
		syncPeriod time.Duration
		want       time.Duration
	}{
		{ModeIPTables, 30 * time.Second, time.Hour},
		{"", 30 * time.Second, time.Hour},
		{ModeIPTables, 2 * time.Hour, 2 * time.Hour},
		{ModeIPVS, 30 * time.Second, 30 * time.Second},
	} {
		if got := fullSyncPeriod(Options{ProxyMode: c.mode, SyncPeriod: c.syncPeriod}); got != c.want {
			t.Errorf("mode %q, --sync-period %v: full sync every %v, want %v", c.mode, c.syncPeriod, got, c.want)
		}
	}
}
