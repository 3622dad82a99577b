// Command miniproxy is the service proxy: it turns Services and EndpointSlices into
// kube-proxy's iptables rules, or IPVS virtual servers, on this node.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/proxy/iptables"
	"github.com/minik8s/minik8s/pkg/proxy/ipvs"
	"github.com/minik8s/minik8s/pkg/proxy/server"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var o server.Options
	var kubeconfig string
	var cleanup, verbose bool
	hostname, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:          "miniproxy",
		Short:        "Service proxy: Services and EndpointSlices as kube-proxy's iptables rules or IPVS virtual servers",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := daemon.Logger(verbose)
			ctx, stop := daemon.SignalContext()
			defer stop()
			if cleanup {
				// Both modes' leftovers: the iptables mode's chains first, as they may
				// reference chains the IPVS mode shares.
				if err := iptables.Cleanup(ctx); err != nil {
					return err
				}
				if err := ipvs.Cleanup(ctx); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "removed every miniproxy chain, rule, ip set, IPVS virtual server and kube-ipvs0")
				return nil
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if kubeconfig == "" {
				return fmt.Errorf("--kubeconfig is required")
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			cfg.UserAgent = "miniproxy"
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			o.Ready = daemon.NotifyReady
			return server.Run(ctx, client, o, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig to reach the API server")
	f.StringVar(&o.HostnameOverride, "hostname-override", hostname, "this node's name, for endpoints local to it")
	f.StringVar(&o.ClusterCIDR, "cluster-cidr", "", "pod CIDR of the cluster: traffic to a Service from outside it is masqueraded")
	f.StringVar(&o.ProxyMode, "proxy-mode", "iptables", `proxy mode: "iptables" or "ipvs"`)
	f.StringVar(&o.IPVS.Scheduler, "ipvs-scheduler", "", "IPVS scheduler with --proxy-mode ipvs: "+strings.Join(ipvs.Schedulers, ", ")+` (empty: "rr")`)
	f.DurationVar(&o.IPVS.TCPTimeout, "ipvs-tcp-timeout", 0, "IPVS: idle timeout of established TCP connections (0: the kernel's)")
	f.DurationVar(&o.IPVS.TCPFinTimeout, "ipvs-tcpfin-timeout", 0, "IPVS: timeout of TCP connections after a FIN (0: the kernel's)")
	f.DurationVar(&o.IPVS.UDPTimeout, "ipvs-udp-timeout", 0, "IPVS: timeout of UDP flows (0: the kernel's)")
	f.BoolVar(&o.IPVS.StrictARP, "ipvs-strict-arp", false, "IPVS: answer ARP only for the asked interface's addresses (arp_ignore=1, arp_announce=2)")
	f.DurationVar(&o.MinSyncPeriod, "min-sync-period", time.Second, "least time between two syncs of the rules")
	f.DurationVar(&o.SyncPeriod, "sync-period", 30*time.Second, "longest time between two syncs (a full resync)")
	f.BoolVar(&o.MasqueradeAll, "masquerade-all", false, "masquerade all traffic sent to Service cluster IPs")
	f.StringVar(&o.MetricsAddress, "metrics-bind-address", "127.0.0.1:10249", "address of /metrics (empty: off)")
	f.BoolVar(&o.Profiling, "profiling", false, "serve /debug/pprof on the metrics address")
	f.StringVar(&o.HealthzAddress, "healthz-bind-address", "0.0.0.0:10256", "address of /healthz (empty: off)")
	f.StringSliceVar(&o.LBInterfaces, "lb-interfaces", nil, "interfaces on which this node answers ARP for the LoadBalancer addresses it is elected for, as MetalLB's layer-2 mode (default none: those addresses answer only on the nodes)")
	f.BoolVar(&cleanup, "cleanup", false, "remove every chain and rule miniproxy made, then exit")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	cmd.AddCommand(explainCommand())
	return cmd
}
