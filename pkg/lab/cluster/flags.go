package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/minik8s/minik8s/deploy/addons"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/network/nodenet"
	"github.com/minik8s/minik8s/pkg/stats"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AddFlags registers `minilab up`'s flags, each filling its field of o. The binaries and
// images are looked for beside the running program by default (bin/ and images/out/ of a
// checkout).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	exe, _ := os.Executable()
	binDir := filepath.Dir(exe)
	fs.IntVar(&o.Nodes, "nodes", 2, "number of nodes")
	fs.StringVar(&o.BinDir, "bin-dir", binDir, "directory holding miniapi and minilet")
	fs.StringVar(&o.ImagesDir, "images-dir", filepath.Join(binDir, "..", "images", "out"), "directory of the image tarballs from `make images`")
	fs.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "how long to wait for the cluster")
	fs.StringVar(&o.PodNetwork, "pod-network", nodenet.ModeHostGW, "how nodes' pods reach each other (minilet --pod-network): host-gw or vxlan")
	fs.IntVar(&o.Segments, "segments", 1, "lab segments (switches) the nodes are spread over, joined only by a router namespace")
	fs.BoolVar(&o.DNS, "dns", true, "deploy cluster DNS (CoreDNS at "+addons.ClusterDNSIP+", docs/dns.md)")
	fs.StringArrayVar(&o.Publish, "publish", nil, "forward a host loopback port to a node's port, [127.0.0.1:]HOSTPORT:NODE:PORT (NODE: node-i or a lab address such as a LoadBalancer IP); repeatable")
	fs.BoolVar(&o.Uplink, "uplink", false, "add a way out inside the lab: a router and an \"internet\" host at "+lab.UplinkHostIP+" serving its caller's address on port 80 (minilab exec uplink)")
	fs.DurationVar(&o.NodeMonitorGracePeriod, "node-monitor-grace-period", 0, "miniapi's --node-monitor-grace-period: how long a silent node stays Ready (0: miniapi's default)")
	fs.StringVar(&o.ProxyMode, "proxy-mode", ProxyIPTables, "miniproxy's mode on every node: iptables or ipvs (needs the kernel's ip_vs)")
	fs.StringVar(&o.EvictionHard, "eviction-hard", DefaultEvictionHard, "minilet's --eviction-hard on every node: the thresholds of its MemoryPressure, DiskPressure and PIDPressure (the default watches no disk: the nodes share the host's)")
	fs.DurationVar(&o.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", stats.DefaultPressureTransitionPeriod, "minilet's --eviction-pressure-transition-period on every node: how long a pressure condition (and so its taint) stays after its threshold was last crossed")
	fs.StringVar(&o.NodeMemory, "node-memory", "", "memory of each node (a quantity: 768Mi): the limit of the node's cgroup, which its minilet reports as capacity and holds --eviction-hard against, so a node under memory pressure leaves the host alone; empty: the host's memory")
	fs.IntVar(&o.ControlPlanes, "control-planes", 1, "control-plane members: 1, or 3 or 5 for a highly available control plane (an etcd member and a miniapi on each, behind an API balancer on the control-plane address)")
	fs.StringVar(&o.Join, "join", JoinCertificate, "how nodes get their credentials: certificate (issued by minilab from the CA) or token (a bootstrap token; each minilet requests its certificate through a CSR, docs/security.md)")
}

// Validate names the flag of a setting `minilab up` cannot use.
func (o *Options) Validate() error {
	if o.Nodes < 1 || o.Nodes > lab.MaxNodes {
		return fmt.Errorf("--nodes must be between 1 and %d, not %d", lab.MaxNodes, o.Nodes)
	}
	if o.Segments < 1 || o.Segments > lab.MaxSegments {
		return fmt.Errorf("--segments must be between 1 and %d, not %d", lab.MaxSegments, o.Segments)
	}
	if o.PodNetwork != nodenet.ModeHostGW && o.PodNetwork != nodenet.ModeVXLAN {
		return fmt.Errorf("--pod-network must be %s or %s, not %q", nodenet.ModeHostGW, nodenet.ModeVXLAN, o.PodNetwork)
	}
	if o.ControlPlanes != 1 && o.ControlPlanes != 3 && o.ControlPlanes != 5 {
		return fmt.Errorf("--control-planes must be 1, 3 or 5 (etcd wants an odd number of members), not %d", o.ControlPlanes)
	}
	if o.NodeMemory != "" {
		if q, err := resource.ParseQuantity(o.NodeMemory); err != nil || q.Value() < 128<<20 {
			return fmt.Errorf("--node-memory must be a quantity of at least 128Mi (768Mi, 1Gi), not %q", o.NodeMemory)
		}
	}
	if _, err := stats.ParseThresholds(o.EvictionHard); err != nil {
		return fmt.Errorf("--eviction-hard: %w", err)
	}
	if o.EvictionPressureTransitionPeriod < 0 {
		return fmt.Errorf("--eviction-pressure-transition-period must not be negative, not %s", o.EvictionPressureTransitionPeriod)
	}
	return nil
}
