// Command miniapi is the control plane: the Kubernetes API server on an embedded store,
// the scheduler and the controllers, in one process.
package main

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/nodeaddr"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/auth"
	"github.com/minik8s/minik8s/pkg/control/controllers/csrsigning"
	"github.com/minik8s/minik8s/pkg/control/controllers/nodelifecycle"
	"github.com/minik8s/minik8s/pkg/control/controllers/podautoscaler"
	"github.com/minik8s/minik8s/pkg/control/controllers/podgc"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var o controlplane.Options
	var verbose bool
	memoryLimit := resource.QuantityValue{Quantity: *resource.NewQuantity(controlplane.DefaultMemoryLimit, resource.BinarySI)}
	cmd := &cobra.Command{
		Use:           "miniapi",
		Short:         "Kubernetes API server, scheduler and controllers in one process",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = daemon.Logger(verbose)
			o.Ready = daemon.NotifyReady
			ctx, stop := daemon.SignalContext()
			defer stop()
			controlplane.TuneRuntime(ctx, memoryLimit.Value())
			return controlplane.Run(ctx, o)
		},
	}
	hpa := podautoscaler.DefaultOptions()
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", controlplane.DefaultDataDir, "directory for the store, the CA and admin.kubeconfig")
	f.StringVar(&o.BindAddress, "bind-address", "0.0.0.0", "IP address to serve on")
	f.IntVar(&o.SecurePort, "secure-port", clusterdefaults.APIServerPort, "HTTPS port")
	f.Var(advertiseAddress{&o.AdvertiseAddress}, "advertise-address", "IP address other cluster members (pods, through the kubernetes Service) reach this server at (default: --bind-address, or the host's first address when that is 0.0.0.0)")
	f.StringSliceVar(&o.TLSSANs, "tls-san", nil, "extra DNS names or IPs for the serving certificate (repeatable)")
	f.StringVar(&o.HostnameOverride, "hostname-override", "", "the name this server goes by instead of the host's: its Lease holderIdentity (NAME_<uuid>), its identity Lease (apiserver-<hash of NAME>) and a name in its serving certificate (several miniapi on one host, as in minilab up --control-planes)")
	f.StringVar(&o.Store, "store", "bolt", `storage engine: "bolt" (embedded, DATA_DIR/state.db) or "etcd://HOST:PORT[,HOST:PORT...]"`)
	f.DurationVar(&o.CompactionInterval, "etcd-compaction-interval", controlplane.DefaultCompactionInterval, "how often the store's history (bolt's or etcd's) is compacted to the revision it had one interval earlier: watches resume, and continue tokens go on, from that far back at most (0: the default)")
	f.StringVar(&o.EncryptionProviderConfig, "encryption-provider-config", "", "apiserver.config.k8s.io/v1 EncryptionConfiguration file: providers (aescbc, aesgcm, secretbox, identity) that encrypt the listed resources in the store (empty: stored as they are)")
	f.StringVar(&o.ServiceRange, "service-cluster-ip-range", clusterdefaults.ServiceCIDR, "CIDR from which Service cluster IPs are allocated")
	f.StringVar(&o.TokenFile, "token-auth-file", "", `static bearer tokens, one "token,user,uid[,\"group1,group2\"]" line each`)
	f.StringSliceVar(&o.Controllers, "controllers", []string{"*"}, "controllers to run: '*' for all, 'name' to enable one, '-name' to disable one; known: "+strings.Join(controlplane.ControllerNames(), ", "))
	f.DurationVar(&o.NodeMonitorPeriod, "node-monitor-period", nodelifecycle.DefaultMonitorPeriod, "how often the node lifecycle controller checks the nodes' heartbeats")
	f.DurationVar(&o.NodeMonitorGracePeriod, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod, "how long a node may go without a heartbeat before it is Unknown and tainted unreachable")
	f.DurationVar(&o.HPA.SyncPeriod, "horizontal-pod-autoscaler-sync-period", hpa.SyncPeriod, "how often each HorizontalPodAutoscaler is reconciled")
	f.DurationVar(&o.HPA.DownscaleStabilization, "horizontal-pod-autoscaler-downscale-stabilization", hpa.DownscaleStabilization, "how far back the autoscaler looks for a higher recommendation before scaling down (autoscalers without a behavior)")
	f.Float64Var(&o.HPA.Tolerance, "horizontal-pod-autoscaler-tolerance", hpa.Tolerance, "how far the usage may be from its target (as a ratio) before the autoscaler acts")
	f.DurationVar(&o.ClusterSigningDuration, "cluster-signing-duration", csrsigning.DefaultDuration, "the longest certificate the csrsigning controller issues (kubelet client and serving, API client certificates); a CSR's spec.expirationSeconds may ask for less")
	f.StringVar(&o.ClusterCIDR, "cluster-cidr", clusterdefaults.ClusterCIDR, "CIDR of the cluster's pods; each node's podCIDR is cut from it")
	f.IntVar(&o.NodeCIDRMaskSize, "node-cidr-mask-size", clusterdefaults.NodeCIDRMaskSize, "prefix length of each node's podCIDR")
	f.IntVar(&o.TerminatedPodGCThreshold, "terminated-pod-gc-threshold", podgc.DefaultTerminatedPodThreshold, "finished pods (Succeeded or Failed) kept before the pod garbage collector deletes the oldest, evicted ones first (0: no limit)")
	f.StringVar(&o.LoadBalancerIPPool, "loadbalancer-ip-pool", "", "addresses for type=LoadBalancer Services: a CIDR or FIRST-LAST (empty: they stay pending)")
	f.StringVar(&o.SchedulerConfig, "scheduler-config", "", "KubeSchedulerConfiguration file: profiles by schedulerName, plugins enabled/disabled and weighted, plugin args (empty: kube-scheduler's default profile)")
	f.BoolVar(&o.LeaderElection.Enabled, "leader-elect", true, "run the controllers and the scheduler only while this miniapi holds their Lease (several miniapi on one etcd)")
	f.DurationVar(&o.LeaderElection.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits before taking over a lease that was not renewed")
	f.DurationVar(&o.LeaderElection.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it gives up leading")
	f.DurationVar(&o.LeaderElection.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew")
	f.StringSliceVar(&o.Security.AuthorizationModes, "authorization-mode", auth.DefaultModes, "ordered authorizers: Node, RBAC, AlwaysAllow, AlwaysDeny (system:masters is always allowed)")
	f.StringVar(&o.Security.ServiceAccountSigningKeyFile, "service-account-signing-key-file", "", "PEM private key that signs service account tokens (default DATA_DIR/pki/sa.key, made on first start)")
	f.StringSliceVar(&o.Security.ServiceAccountKeyFiles, "service-account-key-file", nil, "PEM public keys (or certificates, private keys) that also verify service account tokens (repeatable)")
	f.StringVar(&o.Security.ServiceAccountIssuer, "service-account-issuer", controlplane.DefaultIssuer, "iss claim of service account tokens and the issuer of the OIDC discovery document")
	f.StringSliceVar(&o.Security.APIAudiences, "api-audiences", nil, "audiences a token must name to be accepted here (default: the issuer)")
	f.StringVar(&o.Security.Audit.LogPath, "audit-log-path", "", `audit log file ("-": standard output; empty: no audit log); events are audit.k8s.io/v1 Event JSON lines`)
	f.StringVar(&o.Security.Audit.PolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy: which requests are logged at which level (None, Metadata, Request, RequestResponse)")
	f.IntVar(&o.Security.Audit.MaxSize, "audit-log-maxsize", 0, "megabytes the audit log may reach before it is rotated (0: no limit)")
	f.IntVar(&o.Security.Audit.MaxBackups, "audit-log-maxbackup", 0, "rotated audit log files kept (0: all)")
	f.IntVar(&o.Security.Audit.MaxAge, "audit-log-maxage", 0, "days a rotated audit log file is kept (0: no limit)")
	f.DurationVar(&o.Limits.RequestTimeout, "request-timeout", filters.DefaultLimits.RequestTimeout, "how long a request that is not a watch or a stream may take before it gets 504")
	f.IntVar(&o.Limits.MaxRequestsInflight, "max-requests-inflight", filters.DefaultLimits.MaxRequestsInflight, "read requests served at once (watches and streams apart); more wait in their user's queue, 429 when it is full; 0: no limit")
	f.StringVar(&o.EtcdCAFile, "etcd-cafile", "", "CA that verifies the etcd members (TLS to etcd; with --store etcd://...)")
	f.StringVar(&o.EtcdCertFile, "etcd-certfile", "", "client certificate miniapi shows etcd")
	f.StringVar(&o.EtcdKeyFile, "etcd-keyfile", "", "its private key")
	f.BoolVar(&o.Profiling, "profiling", true, "serve Go's profiles at /debug/pprof/ (non-resource paths: cluster-admin reads them, as kube-apiserver's)")
	f.IntVar(&o.Limits.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", filters.DefaultLimits.MaxMutatingRequestsInflight, "write requests served at once; more wait in their user's queue, 429 when it is full; 0: no limit")
	f.StringSliceVar(&o.KubeletPreferredAddressTypes, "kubelet-preferred-address-types", defaultNodeAddressTypes(),
		"List of the preferred NodeAddressTypes to use for node API (kubelet) connections (kubeadm's order; kube-apiserver's own default puts Hostname first)")
	f.Var(&memoryLimit, "memory-limit", "soft limit of the Go runtime's memory (GOMEMLIMIT, which overrides it): the collector runs more often as memory nears it; it grows to twice the live heap when that is more (about 15 KiB a stored pod); 0: no limit")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	cmd.AddCommand(newKubeconfigCommand(), newServingCertCommand(), newEtcdCertsCommand())
	return cmd
}

// defaultNodeAddressTypes is nodeaddr.DefaultAPITypes as the flag's strings.
func defaultNodeAddressTypes() []string {
	names := make([]string, 0, len(nodeaddr.DefaultAPITypes))
	for _, t := range nodeaddr.DefaultAPITypes {
		names = append(names, string(t))
	}
	return names
}

// caCommand is a subcommand that issues something signed by the cluster CA in
// --data-dir/pki (made if there is none): run writes it and says what it wrote.
func caCommand(use, short string, run func(ca *pki.CA, out io.Writer) error) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:          use,
		Short:        short,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ca, err := pki.EnsureCA(controlplane.PKIDir(dataDir))
			if err != nil {
				return err
			}
			return run(ca, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", controlplane.DefaultDataDir, "miniapi's data directory (holds pki/)")
	return cmd
}

func markRequired(cmd *cobra.Command, flags ...string) *cobra.Command {
	for _, name := range flags {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func newKubeconfigCommand() *cobra.Command {
	var user, server, out string
	var groups []string
	cmd := caCommand("kubeconfig", "Issue a client certificate signed by the cluster CA and write a kubeconfig for it",
		func(ca *pki.CA, w io.Writer) error {
			if err := ca.WriteKubeconfig(out, server, user, groups); err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %s for user %q\n", out, user)
			return nil
		})
	f := cmd.Flags()
	f.StringVar(&user, "user", "", "user name, e.g. system:node:node-1")
	f.StringSliceVar(&groups, "group", nil, "group (repeatable), e.g. system:nodes")
	f.StringVar(&server, "server", "", "API server URL, e.g. https://10.0.0.1:6443")
	f.StringVar(&out, "out", "", "kubeconfig file to write")
	return markRequired(cmd, "user", "server", "out")
}

func newServingCertCommand() *cobra.Command {
	var name, outDir string
	var hosts []string
	cmd := caCommand("serving-cert", "Issue a serving certificate signed by the cluster CA (a node API's: minilet --tls-cert-file)",
		func(ca *pki.CA, w io.Writer) error {
			cert, key, caFile, err := ca.WriteServing(outDir, name, hosts)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %s, %s and %s\n", cert, key, caFile)
			return nil
		})
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "certificate name: writes NAME.crt and NAME.key")
	f.StringSliceVar(&hosts, "host", nil, "IP or DNS name the certificate is valid for (repeatable)")
	f.StringVar(&outDir, "out-dir", "", "directory to write the certificate, its key and ca.crt")
	return markRequired(cmd, "name", "host", "out-dir")
}

func newEtcdCertsCommand() *cobra.Command {
	var name, outDir string
	var hosts []string
	cmd := caCommand("etcd-certs", "Issue an etcd member's peer certificate and miniapi's etcd client certificate, signed by the cluster CA (the etcd unit)",
		func(ca *pki.CA, w io.Writer) error {
			if err := ca.WriteEtcdMember(outDir, name, hosts); err != nil {
				return err
			}
			if err := ca.WriteEtcdClient(outDir); err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote member %s's certificate and the etcd client certificate in %s\n", name, outDir)
			return nil
		})
	cmd.Long = `Writes into --out-dir, from the CA in --data-dir/pki (made if there is none):
  NAME.crt, NAME.key        etcd member NAME's certificate: serves --host, NAME and 127.0.0.1,
                            and is a client of the other members (--cert-file, --peer-cert-file)
  apiserver-etcd-client.*   miniapi's client certificate (--etcd-certfile, --etcd-keyfile)
  ca.crt                    the CA (etcd's --trusted-ca-file, miniapi's --etcd-cafile)
Every control-plane host of one cluster runs it with the same CA (copied from the first).`
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the etcd member's name (etcd --name): writes NAME.crt and NAME.key")
	f.StringSliceVar(&hosts, "host", nil, "IP or DNS name the member serves at besides 127.0.0.1 (repeatable)")
	f.StringVar(&outDir, "out-dir", "", "directory to write the certificates, keys and ca.crt")
	return markRequired(cmd, "name", "out-dir")
}

// advertiseAddress is --advertise-address, an IP address.
type advertiseAddress struct{ addr *netip.Addr }

func (a advertiseAddress) String() string {
	if a.addr == nil || !a.addr.IsValid() {
		return ""
	}
	return a.addr.String()
}

func (a advertiseAddress) Set(s string) error {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return fmt.Errorf("not an IP address: %w", err)
	}
	*a.addr = ip.Unmap()
	return nil
}

func (advertiseAddress) Type() string { return "ip" }
