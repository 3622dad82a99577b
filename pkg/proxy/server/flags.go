package server

import (
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/proxy/ipvs"
	"github.com/spf13/pflag"
)

// kube-proxy's defaults of the sync periods.
const (
	DefaultMinSyncPeriod = time.Second
	DefaultSyncPeriod    = 30 * time.Second
)

// AddFlags registers miniproxy's flags, kube-proxy's names and defaults, each filling its
// field of o. --hostname-override defaults to this host's name.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	hostname, _ := os.Hostname()
	fs.StringVar(&o.HostnameOverride, "hostname-override", hostname, "this node's name, for endpoints local to it")
	fs.StringVar(&o.ClusterCIDR, "cluster-cidr", "", "pod CIDR of the cluster: traffic to a Service from outside it is masqueraded")
	fs.StringVar(&o.ProxyMode, "proxy-mode", ModeIPTables, `proxy mode: "iptables" or "ipvs"`)
	fs.StringVar(&o.IPVS.Scheduler, "ipvs-scheduler", "", "IPVS scheduler with --proxy-mode ipvs: "+strings.Join(ipvs.Schedulers, ", ")+` (empty: "rr")`)
	fs.DurationVar(&o.IPVS.TCPTimeout, "ipvs-tcp-timeout", 0, "IPVS: idle timeout of established TCP connections (0: the kernel's)")
	fs.DurationVar(&o.IPVS.TCPFinTimeout, "ipvs-tcpfin-timeout", 0, "IPVS: timeout of TCP connections after a FIN (0: the kernel's)")
	fs.DurationVar(&o.IPVS.UDPTimeout, "ipvs-udp-timeout", 0, "IPVS: timeout of UDP flows (0: the kernel's)")
	fs.BoolVar(&o.IPVS.StrictARP, "ipvs-strict-arp", false, "IPVS: answer ARP only for the asked interface's addresses (arp_ignore=1, arp_announce=2)")
	fs.DurationVar(&o.MinSyncPeriod, "min-sync-period", DefaultMinSyncPeriod, "least time between two syncs of the rules")
	fs.DurationVar(&o.SyncPeriod, "sync-period", DefaultSyncPeriod, "longest time between two syncs (a full resync)")
	fs.BoolVar(&o.MasqueradeAll, "masquerade-all", false, "masquerade all traffic sent to Service cluster IPs")
	fs.StringVar(&o.MetricsAddress, "metrics-bind-address", clusterdefaults.ProxyMetricsAddress, "address of /metrics (empty: off)")
	fs.BoolVar(&o.Profiling, "profiling", false, "serve /debug/pprof on the metrics address")
	fs.StringVar(&o.HealthzAddress, "healthz-bind-address", net.JoinHostPort("0.0.0.0", strconv.Itoa(clusterdefaults.ProxyHealthzPort)), "address of /healthz (empty: off)")
	fs.BoolVar(&o.BindAddressHardFail, "bind-address-hard-fail", false, "exit, recording an Event on the node, when the metrics or healthz address cannot be bound (default: log and try again every 5s)")
	fs.StringVar(&o.MemoryLimit, "memory-limit", "", "Go's soft memory limit (GOMEMLIMIT), a quantity such as 40Mi: the collector runs harder near it instead of letting garbage grow the heap (empty: GOMEMLIMIT's, or none)")
	fs.StringSliceVar(&o.LBInterfaces, "lb-interfaces", nil, "interfaces on which this node answers ARP for the LoadBalancer addresses it is elected for, as MetalLB's layer-2 mode (default none: those addresses answer only on the nodes)")
}
