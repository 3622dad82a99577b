// Command minilet is the node agent: it registers the node and runs the pods bound to it
// through containerd and CNI.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/agent"
	"github.com/minik8s/minik8s/pkg/agent/certificate"
	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/stats"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	anpclient "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var cfg agent.Config
	var kubeconfig, bootstrapKubeconfig, certDir string
	var rotateCertificates bool
	var healthzAddr string
	var healthzPort int
	var verbose bool
	var apiQPS float32
	var apiBurst int
	var eventQPS float32
	var eventBurst int
	var maxPodGraceSeconds int32
	cmd := &cobra.Command{
		Use:          "minilet",
		Short:        "Node agent: registers the node and runs its pods through containerd and CNI",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := daemon.Logger(verbose)
			cfg.EvictionMaxPodGracePeriod = time.Duration(maxPodGraceSeconds) * time.Second
			if cfg.NodeName == "" {
				host, err := os.Hostname()
				if err != nil {
					return fmt.Errorf("--node-name not given and the host name is unknown: %w", err)
				}
				cfg.NodeName = strings.ToLower(host)
			}
			ctx, stop := daemon.SignalContext()
			defer stop()
			// fail stops minilet when its client certificate expired (a restart bootstraps again).
			ctx, fail := context.WithCancelCause(ctx)
			defer fail(nil)
			var restCfg *rest.Config
			var err error
			if certDir == "" {
				certDir = filepath.Join(cfg.RootDir, "pki")
			}
			cfg.CertDir = certDir
			if bootstrapKubeconfig != "" || rotateCertificates {
				restCfg, err = certificate.Rotating(ctx, certificate.Options{Kubeconfig: kubeconfig, BootstrapKubeconfig: bootstrapKubeconfig,
					CertDir: certDir, NodeName: cfg.NodeName, Log: log}, fail)
			} else if restCfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
				err = fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			if err != nil {
				return err
			}
			restCfg.UserAgent = "minilet/" + cfg.NodeName
			if apiQPS <= 0 || apiBurst <= 0 {
				return fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d must be positive", apiQPS, apiBurst)
			}
			if eventQPS <= 0 || eventBurst <= 0 {
				return fmt.Errorf("--event-qps %v and --event-burst %d must be positive", eventQPS, eventBurst)
			}
			// Events get a rate limit of their own, as the kubelet's event client has, so a
			// burst of pod starts does not queue status writes behind their events.
			eventCfg := rest.CopyConfig(restCfg)
			eventCfg.QPS, eventCfg.Burst = eventQPS, eventBurst
			restCfg.QPS, restCfg.Burst = apiQPS, apiBurst
			client, err := kubernetes.NewForConfig(restCfg)
			if err != nil {
				return err
			}
			eventClient, err := kubernetes.NewForConfig(eventCfg)
			if err != nil {
				return err
			}
			adminPolicies, err := anpclient.NewForConfig(restCfg)
			if err != nil {
				return err
			}
			cfg.HealthzAddr = fmt.Sprintf("%s:%d", healthzAddr, healthzPort)
			cfg.Ready = daemon.NotifyReady
			if err := run(ctx, cfg, client, eventClient, adminPolicies, log); err != nil {
				return err
			}
			if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig with this node's credentials; with --bootstrap-kubeconfig, written by minilet once it has its certificate")
	f.StringVar(&bootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with a bootstrap token, used to request this node's client certificate (a CertificateSigningRequest) when --kubeconfig is missing or its certificate expired; turns on certificate rotation")
	f.StringVar(&certDir, "cert-dir", "", "where the node's client and serving certificates and keys are kept (kubelet-client-current.pem, kubelet-server-current.pem) when minilet manages them (default: ROOT_DIR/pki)")
	f.BoolVar(&rotateCertificates, "rotate-certificates", false, "renew the client certificate through CertificateSigningRequests before it expires (always on with --bootstrap-kubeconfig)")
	f.BoolVar(&cfg.RotateServerCertificates, "rotate-server-certificates", false, "request the node API's serving certificate (signer kubernetes.io/kubelet-serving, kept in --cert-dir) through CertificateSigningRequests and renew it before it expires, instead of --tls-cert-file; a cluster admin approves each request (kubectl certificate approve)")
	f.StringVar(&cfg.NodeName, "node-name", "", "name of this node (default: the host name)")
	f.StringVar(&cfg.NodeIP, "node-ip", "", "IP address of this node (InternalIP)")
	f.StringVar(&cfg.PodCIDR, "pod-cidr", "", "CIDR for this node's pod IPs, e.g. 10.244.1.0/24 (default: the one miniapi's node IPAM assigns)")
	f.StringVar(&cfg.ContainerdAddress, "containerd", "/run/containerd/containerd.sock", "containerd socket")
	f.StringVar(&cfg.ContainerdNamespace, "containerd-namespace", "minilet", "containerd namespace for this node's containers")
	f.StringVar(&cfg.RootDir, "root-dir", "/var/lib/minilet", "directory for pod network namespaces, CNI state and logs")
	f.StringVar(&cfg.CNIBinDir, "cni-bin-dir", "/usr/lib/cni", "directory of the CNI plugin binaries")
	f.StringVar(&cfg.CNIBridge, "cni-bridge", "cni0", "name of the pod bridge")
	f.StringVar(&cfg.CNIConfig, "cni-config", "auto", "auto: generate the CNI network from the pod CIDR into --cni-conf-dir; file: use the operator's conflist found there as is")
	f.StringVar(&cfg.CNIConfDir, "cni-conf-dir", "", "directory of the CNI network configuration (default: ROOT_DIR/cni/net.d)")
	f.StringVar(&cfg.PodNetwork, "pod-network", "host-gw", "how pods reach other nodes' pods: host-gw (routes via node IPs, one L2 segment), vxlan (overlay), none (the CNI network does it)")
	f.StringVar(&cfg.PodManifestPath, "pod-manifest-path", "", "directory of static pod manifests (one pod per YAML or JSON file)")
	f.DurationVar(&cfg.FileCheckFrequency, "file-check-frequency", 20*time.Second, "how often --pod-manifest-path is rescanned (changes are also watched)")
	f.StringSliceVar(&cfg.InsecureRegistries, "insecure-registry", nil, "registry host[:port] to pull from over plain HTTP (repeatable; localhost always is)")
	f.IntVar(&cfg.ImageGCHighThreshold, "image-gc-high-threshold", 85, "percent of the image filesystem above which unused images are removed (100 disables)")
	f.IntVar(&cfg.ImageGCLowThreshold, "image-gc-low-threshold", 80, "percent of the image filesystem that image garbage collection frees down to")
	f.StringVar(&cfg.CgroupRoot, "cgroup-root", "/minik8s", "cgroup under which pods' cgroups go (ROOT/kubepods/...)")
	f.StringVar(&cfg.NodeCgroup, "node-cgroup", "", "cgroup holding the whole node (its daemons and pods), whose usage the stats report as the node's, as a node in a container sees its own root cgroup (minilab's nodes); empty: the machine's, as the kubelet's root cgroup")
	f.StringVar(&cfg.ContainerLogMaxSize, "container-log-max-size", "10Mi", "size at which a container's log file is rotated")
	f.IntVar(&cfg.ContainerLogMaxFiles, "container-log-max-files", 5, "log files kept per container, the current one included (at least 2)")
	f.StringToStringVar(&cfg.SystemReserved, "system-reserved", nil, "resources kept for the system, not for pods: cpu=500m,memory=1Gi,ephemeral-storage=1Gi")
	f.StringToStringVar(&cfg.KubeReserved, "kube-reserved", nil, "resources kept for minilet and containerd, not for pods (as --system-reserved)")
	f.Int64Var(&cfg.PodMaxPids, "pod-max-pids", -1, "most processes a pod may have (-1: no limit)")
	f.StringVar(&healthzAddr, "healthz-bind-address", "127.0.0.1", "address for /healthz and /metrics")
	f.IntVar(&healthzPort, "healthz-port", 10248, "port for /healthz and /metrics")
	f.BoolVar(&cfg.Profiling, "profiling", false, "serve Go's /debug/pprof on the healthz address (keep it on loopback)")
	f.IntVar(&cfg.Port, "port", 10250, "port of the node API (logs, exec, port-forward), served on --node-ip")
	f.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "serving certificate of the node API; without it the node API is not served")
	f.StringVar(&cfg.TLSPrivateKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	f.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "CA that node API clients' certificates must be signed by")
	f.StringSliceVar(&cfg.ClusterDNS, "cluster-dns", nil, "IP of the cluster DNS Service (comma-separated for several): the nameserver of ClusterFirst pods (kube-dns is 10.96.0.10)")
	f.StringVar(&cfg.ClusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain, searched by ClusterFirst pods")
	f.StringVar(&cfg.ResolvConf, "resolv-conf", "/etc/resolv.conf", "resolver configuration that Default pods get and ClusterFirst pods take search domains from (\"\" for none)")
	f.StringVar(&cfg.Eviction.Hard, "eviction-hard", stats.DefaultEvictionHard, "thresholds (signal<quantity or signal<percent%) below which the node reports MemoryPressure, DiskPressure or PIDPressure; signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available; while one is crossed, pods are evicted one at a time in the kubelet's order (docs/resources.md)")
	f.StringVar(&cfg.Eviction.Soft, "eviction-soft", "", "thresholds as --eviction-hard that evict only once crossed for their --eviction-soft-grace-period (the pressure condition comes at once)")
	f.StringVar(&cfg.Eviction.SoftGracePeriod, "eviction-soft-grace-period", "", "how long each --eviction-soft threshold must stay crossed before pods are evicted: memory.available=1m30s (every soft threshold needs one)")
	f.StringVar(&cfg.Eviction.MinimumReclaim, "eviction-minimum-reclaim", "", "once a threshold of the signal is crossed, evict until the signal is this much above it: memory.available=0Mi,nodefs.available=500Mi")
	f.Int32Var(&maxPodGraceSeconds, "eviction-max-pod-grace-period", 0, "most seconds of terminationGracePeriodSeconds a pod evicted for a soft threshold gets (hard thresholds: 1 s)")
	f.DurationVar(&cfg.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", stats.DefaultPressureTransitionPeriod, "how long a pressure condition stays after its threshold was last crossed")
	f.Float32Var(&apiQPS, "kube-api-qps", 50, "requests per second to the API server (the kubelet's default)")
	f.IntVar(&apiBurst, "kube-api-burst", 100, "burst of requests to the API server above --kube-api-qps")
	f.Float32Var(&eventQPS, "event-qps", 50, "events per second sent to the API server, limited apart from --kube-api-qps (the kubelet's default)")
	f.IntVar(&eventBurst, "event-burst", 100, "burst of events above --event-qps")
	f.StringSliceVar(&cfg.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", nil, "comma-separated unsafe sysctls or sysctl patterns (ending in *) pods may set beyond the safe ones, e.g. 'kernel.msg*,net.core.somaxconn'; each must be namespaced. Use at your own risk")
	f.BoolVar(&cfg.NetworkPolicy, "network-policy", true, "enforce NetworkPolicies for this node's pods in iptables and ipsets")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	cmd.AddCommand(networkCommand())
	_ = cmd.MarkFlagRequired("kubeconfig")
	_ = cmd.MarkFlagRequired("node-ip")
	return cmd
}
