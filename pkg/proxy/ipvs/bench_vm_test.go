package ipvs

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/vmtest"
	"github.com/minik8s/minik8s/pkg/proxy/iptables"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// benchEnv turns the benchmark on; benchSizesEnv overrides the Service counts.
const (
	benchEnv      = "MINIK8S_BENCH"
	benchSizesEnv = "MINIK8S_BENCH_SIZES"
	// benchBaselineEnv is the largest N the iptables baseline runs at.
	benchBaselineEnv = "MINIK8S_BENCH_BASELINE_MAX"
)

// TestIPVSBenchInVM is the IPVS benchmark (not a timed test: it asserts nothing about
// times): in the VM, N Services x 2 endpoints for N = 1k, 5k, 10k, it prints the full sync
// into an empty kernel, a full resync with nothing changed, and one endpoint change, with
// the iptables mode measured on the same Services in the same VM as the baseline, and the
// process RSS. Run: MINIK8S_BENCH=1 go test -run TestIPVSBenchInVM -v ./pkg/proxy/ipvs
func TestIPVSBenchInVM(t *testing.T) {
	if os.Getenv(benchEnv) != "1" {
		t.Skipf("a benchmark: set %s=1 to run it", benchEnv)
	}
	if !vmtest.InVM() {
		vmtest.RunTest(t, vmOptions(t, 3072, 25*time.Minute, benchEnv+"=1", benchSizesEnv+"="+os.Getenv(benchSizesEnv),
			benchBaselineEnv+"="+os.Getenv(benchBaselineEnv)))
		return
	}
	sizes := []int{1000, 5000, 10000}
	if s := os.Getenv(benchSizesEnv); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			must(t, err)
			sizes = append(sizes, n)
		}
	}
	baselineMax := 1000
	if s := os.Getenv(benchBaselineEnv); s != "" {
		var err error
		baselineMax, err = strconv.Atoi(s)
		must(t, err)
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelError}))
	var report strings.Builder
	fmt.Fprintf(&report, "%-6s %-9s %12s %12s %14s %s\n", "N", "mode", "full sync", "full resync", "1 change", "details")
	for _, n := range sizes {
		svcs, slices := benchObjects(n)
		services, sliceLister := corelisters.NewServiceLister(svcs), discoverylisters.NewEndpointSliceLister(slices)

		// IPVS.
		p, err := New(Config{ClusterCIDR: "10.244.0.0/16", NodeIPs: func() ([]net.IP, error) { return nil, nil }}, services, sliceLister, "vm", log)
		must(t, err)
		first, err := p.Sync(ctx)
		must(t, err)
		p.ForceFull()
		resync, err := p.Sync(ctx)
		must(t, err)
		changes := benchChanges(t, slices, n, 1, func(changed any) (time.Duration, string) {
			p.Changed(changed) // what miniproxy's informer handlers tell it
			res, err := p.Sync(ctx)
			must(t, err)
			if res.Full || res.IPVSCalls != 2 {
				t.Fatalf("one endpoint change: full=%v, %d IPVS calls (want a partial sync: one real server added, one removed)", res.Full, res.IPVSCalls)
			}
			return res.Duration, fmt.Sprintf("snapshot %v, wanted state %v (%d ports), ipvs %v, sets %v, rules %v", res.Snapshot.Round(time.Microsecond),
				res.Wanted.Round(time.Microsecond), res.Recomputed, res.IPVSTime.Round(time.Microsecond), res.SetsTime.Round(time.Microsecond), res.RulesTime.Round(time.Microsecond))
		})
		rss := rssMB()
		ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		fmt.Fprintf(&report, "%-6d %-9s %12v %12v %14v VS %d, RS %d; full: snapshot %v, addresses %v, ipvs %v, sets %v, rules %v; "+
			"resync: read %v; change: %s; RSS %.0f MB\n",
			n, "ipvs", ms(first.Duration), ms(resync.Duration), changes.d.Round(time.Microsecond),
			first.VirtualServers, first.RealServers, ms(first.Snapshot), ms(first.AddrTime), ms(first.IPVSTime),
			ms(first.SetsTime), ms(first.RulesTime), ms(resync.ReadTime), changes.detail, rss)
		p.Close()
		must(t, Cleanup(ctx))

		// The baseline: iptables mode on the same Services, same VM; in software emulation
		// it takes minutes past 1 000 Services, so only up to MINIK8S_BENCH_BASELINE_MAX.
		if n > baselineMax {
			continue
		}
		ip, err := iptables.New(iptables.Config{ClusterCIDR: "10.244.0.0/16"}, services, sliceLister, "vm", log)
		must(t, err)
		ifirst, err := ip.Sync(ctx)
		must(t, err)
		ip.ForceFull()
		iresync, err := ip.Sync(ctx)
		must(t, err)
		ichanges := benchChanges(t, slices, n, 6, func(changed any) (time.Duration, string) {
			ip.Changed(changed) // what miniproxy's informer handlers tell it
			res, err := ip.Sync(ctx)
			must(t, err)
			return res.Duration, fmt.Sprintf("full=%v, %d chains written", res.Full, res.ChainsWritten)
		})
		fmt.Fprintf(&report, "%-6d %-9s %12v %12v %14v nat rules %d, restore input %d KB; change: %s; RSS %.0f MB\n",
			n, "iptables", ifirst.Duration.Round(time.Millisecond), iresync.Duration.Round(time.Millisecond), ichanges.d.Round(time.Microsecond),
			ifirst.NATRules, ifirst.RestoreBytes/1024, ichanges.detail, rssMB())
		must(t, iptables.Cleanup(ctx))
		t.Logf("so far:\n%s", report.String())
	}
	fmt.Printf("IPVS BENCHMARK (kernel %s in qemu, software emulation, 1 vCPU)\n%s", kernelRelease(), report.String())
}

// benchObjects are n ClusterIP Services with a 2-endpoint slice each (endpoints on another
// node).
func benchObjects(n int) (cache.Indexer, cache.Indexer) {
	svcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		_ = svcs.Add(service(name, fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), corev1.ProtocolTCP, 80, 0, 0))
		_ = slices.Add(benchSlice(name, i, 0))
	}
	return svcs, slices
}

// benchSlice is Service i's slice; generation g moves its second endpoint.
func benchSlice(name string, i, g int) *discoveryv1.EndpointSlice {
	s := slice(name, corev1.ProtocolTCP, 8080, fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), fmt.Sprintf("10.%d.%d.%d", 2+g, i/250, i%250+1))
	for j := range s.Endpoints {
		s.Endpoints[j].NodeName = ptr.To("other")
	}
	return s
}

type changeResult struct {
	d      time.Duration // median
	detail string
}

// benchChanges moves one endpoint of one Service five times, syncing after each; it returns
// the median sync time. Generations first..first+4 must differ from earlier calls' on the
// same slices, or nothing changes.
func benchChanges(t *testing.T, slices cache.Indexer, n, first int, sync func(changed any) (time.Duration, string)) changeResult {
	var ds []time.Duration
	var detail string
	for g := first; g < first+5; g++ {
		i := (g * 7919) % n
		s := benchSlice(fmt.Sprintf("svc-%d", i), i, g)
		must(t, slices.Update(s))
		d, det := sync(s)
		ds = append(ds, d)
		detail = det
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return changeResult{d: ds[len(ds)/2], detail: detail}
}

func rssMB() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

func kernelRelease() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}
