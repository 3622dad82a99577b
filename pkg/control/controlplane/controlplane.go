// Package controlplane assembles miniapi: the store, the API server on TLS, and the
// in-process clients of it (scheduler, controllers), each talking to the API through
// client-go over loopback like any other client.
package controlplane

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minik8s/minik8s/internal/controller/discovered"
	"github.com/minik8s/minik8s/internal/controller/trim"
	"github.com/minik8s/minik8s/internal/eventsink"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/admission/webhook"
	"github.com/minik8s/minik8s/pkg/control/allocator"
	"github.com/minik8s/minik8s/pkg/control/apiextensions"
	"github.com/minik8s/minik8s/pkg/control/apiserver"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/discovery"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiservices"
	"github.com/minik8s/minik8s/pkg/control/auth"
	"github.com/minik8s/minik8s/pkg/control/controllers/loadbalancer"
	"github.com/minik8s/minik8s/pkg/control/controllers/nodeipam"
	"github.com/minik8s/minik8s/pkg/control/controllers/serviceaccounttoken"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/scheduler"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/encryption"
	"github.com/minik8s/minik8s/pkg/network/policy/admincrd"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// Options are miniapi's settings.
type Options struct {
	DataDir     string
	BindAddress string
	SecurePort  int
	TLSSANs     []string
	// HostnameOverride is the name this server goes by instead of the host's: its Lease
	// holderIdentity (NAME_uuid) and a name in its serving certificate.
	HostnameOverride string
	Store            string // "bolt" or "etcd://host:port,..."
	WatchHistory     int    // past changes kept for resuming watches: bolt's log, the watch cache's ring (0: defaults)
	// CompactionInterval is how often the store's history is compacted to the revision it had
	// one interval earlier, on both engines (--etcd-compaction-interval; 0: 5 min,
	// kube-apiserver's default).
	CompactionInterval time.Duration
	ServiceRange       string
	TokenFile          string   // static bearer tokens (--token-auth-file)
	Controllers        []string // --controllers: "*", "name", "-name"
	// NodeMonitorPeriod and NodeMonitorGracePeriod time the node lifecycle controller
	// (0: nodelifecycle's defaults, kube-controller-manager's).
	NodeMonitorPeriod, NodeMonitorGracePeriod time.Duration
	LeaderElection                            LeaderElection
	// HPA is the horizontal pod autoscaler's --horizontal-pod-autoscaler-* settings
	// (zero fields: kube-controller-manager's defaults).
	HPA                HPAOptions
	LoadBalancerIPPool string // --loadbalancer-ip-pool: CIDR or FIRST-LAST; "" gives none
	// ClusterCIDR and NodeCIDRMaskSize are where nodes' pod CIDRs come from (0/"":
	// clusterdefaults').
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// TerminatedPodGCThreshold is --terminated-pod-gc-threshold: how many finished pods the
	// pod GC keeps before deleting the oldest (0: no limit, as kube-controller-manager's;
	// the flag's default is podgc.DefaultTerminatedPodThreshold).
	TerminatedPodGCThreshold int
	Security                 Security
	// Limits: --request-timeout, --max-requests-inflight, --max-mutating-requests-inflight
	// (zero: filters.DefaultLimits).
	Limits filters.Limits
	// KubeletPreferredAddressTypes are the node address types tried in order to reach a
	// node's API (--kubelet-preferred-address-types; nil: nodeaddr.DefaultAPITypes).
	KubeletPreferredAddressTypes []string
	// ClusterSigningDuration is the longest certificate the csrsigning controller issues
	// (--cluster-signing-duration; 0: a year, kube-controller-manager's default).
	ClusterSigningDuration time.Duration
	// SchedulerConfig is a KubeSchedulerConfiguration file (--scheduler-config; "": defaults).
	SchedulerConfig string
	Log             *slog.Logger
	Ready           func() // called once the API answers /readyz on its listener (nil: nothing)

	// EncryptionProviderConfig is an EncryptionConfiguration file (--encryption-provider-config;
	// "": values stored as they are).
	EncryptionProviderConfig string
	// AdvertiseAddress is the address the `kubernetes` Service's endpoints give other
	// members of the cluster (--advertise-address; invalid: from --bind-address).
	AdvertiseAddress netip.Addr
	// MasterLeaseTTL is how long a stopped API server stays in those endpoints (0: 15 s).
	MasterLeaseTTL time.Duration
	// Profiling serves /debug/pprof/ to who may get it (--profiling, true in miniapi as in
	// kube-apiserver).
	Profiling bool
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile secure the connections to etcd as
	// kube-apiserver's --etcd-cafile, --etcd-certfile, --etcd-keyfile: the CA verifies the
	// members, the pair authenticates miniapi to them ("": plain TCP).
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
}

// DefaultDataDir is miniapi's --data-dir: the store, the CA and admin.kubeconfig.
const DefaultDataDir = "/var/lib/miniapi"

// AdminKubeconfig is the admin kubeconfig's path inside the data dir.
func AdminKubeconfig(dataDir string) string { return filepath.Join(dataDir, "admin.kubeconfig") }

// PKIDir is where the cluster CA lives inside the data dir.
func PKIDir(dataDir string) string { return filepath.Join(dataDir, "pki") }

// Validate checks options before anything is touched.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is required"))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if o.SecurePort < 1 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not between 1 and 65535", o.SecurePort))
	}
	if _, _, err := net.ParseCIDR(o.ServiceRange); err != nil {
		errs = append(errs, fmt.Errorf("--service-cluster-ip-range %q: %w", o.ServiceRange, err))
	}
	if endpoints, err := etcdEndpoints(o.Store); err != nil {
		errs = append(errs, err)
	} else if err := o.validateEtcdTLS(endpoints != nil); err != nil {
		errs = append(errs, err)
	}
	if _, err := enabledControllers(o.Controllers); err != nil {
		errs = append(errs, err)
	}
	if o.NodeMonitorPeriod < 0 || o.NodeMonitorGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--node-monitor-period %v and --node-monitor-grace-period %v must not be negative", o.NodeMonitorPeriod, o.NodeMonitorGracePeriod))
	}
	if le := o.LeaderElection; le.Enabled && !(le.LeaseDuration > le.RenewDeadline && float64(le.RenewDeadline) > 1.2*float64(le.RetryPeriod) && le.RetryPeriod > 0) {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration %v must exceed --leader-elect-renew-deadline %v, which must exceed 1.2 x --leader-elect-retry-period %v (> 0)",
			le.LeaseDuration, le.RenewDeadline, le.RetryPeriod))
	}
	if _, err := o.nodeRanges(); err != nil {
		errs = append(errs, err)
	}
	if o.LoadBalancerIPPool != "" {
		if _, err := loadbalancer.ParsePool(o.LoadBalancerIPPool); err != nil {
			errs = append(errs, err)
		}
	}
	if err := o.Security.validate(); err != nil {
		errs = append(errs, err)
	}
	if h := o.HPA; h.SyncPeriod < 0 || h.DownscaleStabilization < 0 || h.Tolerance < 0 {
		errs = append(errs, fmt.Errorf("--horizontal-pod-autoscaler-sync-period %v, -downscale-stabilization %v and -tolerance %v must not be negative",
			h.SyncPeriod, h.DownscaleStabilization, h.Tolerance))
	}
	if o.ClusterSigningDuration < 0 {
		errs = append(errs, fmt.Errorf("--cluster-signing-duration %v must not be negative", o.ClusterSigningDuration))
	}
	if o.CompactionInterval < 0 {
		errs = append(errs, fmt.Errorf("compaction interval %s must not be negative", o.CompactionInterval))
	}
	if o.WatchHistory < 0 {
		errs = append(errs, fmt.Errorf("watch history %d must not be negative", o.WatchHistory))
	}
	if o.Limits != (filters.Limits{}) {
		errs = append(errs, o.Limits.Validate())
	}
	return errors.Join(errs...)
}

// DefaultCompactionInterval is kube-apiserver's --etcd-compaction-interval: watches resume,
// and continue tokens go on, from one to two intervals back at most.
const DefaultCompactionInterval = 5 * time.Minute

// etcdStorePrefix is "etcd://": --store=etcd://HOST:PORT[,HOST:PORT...] selects etcd.
const etcdStorePrefix = "etcd://"

// etcdEndpoints reads --store: nil for "bolt", the endpoints for "etcd://HOST:PORT,...".
func etcdEndpoints(flag string) ([]string, error) {
	if flag == "bolt" {
		return nil, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("--store %q: %s; want \"bolt\" or \"%sHOST:PORT[,HOST:PORT...]\"", flag, why, etcdStorePrefix)
	}
	list, ok := strings.CutPrefix(flag, etcdStorePrefix)
	if !ok {
		return nil, bad("unknown store")
	}
	var endpoints []string
	for _, ep := range strings.Split(list, ",") {
		host, port, err := net.SplitHostPort(ep)
		if err != nil || host == "" {
			return nil, bad(fmt.Sprintf("endpoint %q is not HOST:PORT", ep))
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, bad(fmt.Sprintf("endpoint %q has no valid port", ep))
		}
		endpoints = append(endpoints, ep)
	}
	return endpoints, nil
}

func (o *Options) validateEtcdTLS(etcd bool) error {
	switch {
	case o.EtcdCAFile == "" && o.EtcdCertFile == "" && o.EtcdKeyFile == "":
		return nil
	case !etcd:
		return fmt.Errorf("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --store %sHOST:PORT,...", etcdStorePrefix)
	case o.EtcdCAFile == "":
		return errors.New("--etcd-certfile and --etcd-keyfile need --etcd-cafile to verify the etcd members")
	case (o.EtcdCertFile == "") != (o.EtcdKeyFile == ""):
		return errors.New("--etcd-certfile and --etcd-keyfile go together")
	}
	return nil
}

// etcdTLS is the TLS configuration --etcd-cafile and its pair give (nil without them).
func (o *Options) etcdTLS() (*tls.Config, error) {
	if o.EtcdCAFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{TrustedCAFile: o.EtcdCAFile, CertFile: o.EtcdCertFile, KeyFile: o.EtcdKeyFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd TLS (--etcd-cafile %s, --etcd-certfile %s, --etcd-keyfile %s): %w", o.EtcdCAFile, o.EtcdCertFile, o.EtcdKeyFile, err)
	}
	return cfg, nil
}

// openStore opens the engine --store names under the watch cache the API server reads
// through. Keys are stored as they are (/registry/...), in etcd as in Kubernetes.
func openStore(ctx context.Context, o Options, log *slog.Logger) (*store.Cache, error) {
	endpoints, err := etcdEndpoints(o.Store)
	if err != nil {
		return nil, err
	}
	var transformers encryption.Transformers
	if o.EncryptionProviderConfig != "" {
		if transformers, err = encryption.Load(ctx, o.EncryptionProviderConfig); err != nil {
			return nil, err
		}
	}
	var engine store.Interface
	if endpoints == nil {
		path := filepath.Join(o.DataDir, "state.db")
		if err := refuseEmptyStore(path, o.DataDir); err != nil {
			return nil, err
		}
		// The cache below keeps the recent events in its own ring of the same size, so bolt's
		// ring would only hold each update's previous value a second time (a copy out of the
		// mmap): the cache's rare re-watch reads bolt's on-disk log instead.
		engine, err = store.OpenBolt(path, store.BoltOptions{HistoryLimit: o.WatchHistory, RingSize: 1, Logger: log})
	} else {
		var tlsConfig *tls.Config
		if tlsConfig, err = o.etcdTLS(); err != nil {
			return nil, err
		}
		engine, err = store.OpenEtcd(endpoints, "", tlsConfig)
	}
	if err != nil {
		return nil, err
	}
	if transformers != nil {
		engine = encryption.Wrap(engine, transformers, log)
	}
	cache, err := store.NewCache(engine, store.CacheOptions{RingSize: o.WatchHistory, Logger: log})
	if err != nil {
		_ = engine.Close()
		return nil, err
	}
	return cache, nil
}

// refuseEmptyStore fails when the bolt store is missing or empty although the data dir
// served a cluster: the admin kubeconfig is written only after the store was bootstrapped,
// so its presence means objects were lost, and starting would silently make a new, empty
// cluster under the old CA and credentials.
func refuseEmptyStore(path, dataDir string) error {
	kubeconfig := AdminKubeconfig(dataDir)
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil // a new data dir
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("store %s: %w", path, err)
	case fi.Size() > 0:
		return nil
	}
	return fmt.Errorf("store %s is missing or empty, yet %s holds a cluster that was in use (%s, %s): refusing to start an empty cluster over it. "+
		"Restore state.db from a backup; to really start a new cluster, remove %s (and %s for a new CA)",
		path, dataDir, kubeconfig, PKIDir(dataDir), kubeconfig, PKIDir(dataDir))
}

// serviceRanges are the ranges Services draw cluster IPs (--service-cluster-ip-range) and
// node ports from, held in st.
func serviceRanges(st store.Interface, cidr string) (allocator.Ranges, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return allocator.Ranges{}, fmt.Errorf("--service-cluster-ip-range %q: %w", cidr, err)
	}
	ranges, err := allocator.NewRanges(st, prefix, allocator.DefaultNodePorts)
	if err != nil {
		return allocator.Ranges{}, fmt.Errorf("--service-cluster-ip-range %q: %w", cidr, err)
	}
	return ranges, nil
}

// advertiseAddress is where pods reach this server (the `kubernetes` Service's endpoint):
// --advertise-address, else the bind address, or with a wildcard bind the host's first global unicast address of
// the same family.
func (o *Options) advertiseAddress() netip.Addr {
	if o.AdvertiseAddress.IsValid() {
		return o.AdvertiseAddress
	}
	bind, err := netip.ParseAddr(o.BindAddress)
	if err != nil || !bind.IsUnspecified() {
		return bind.Unmap()
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Addr{}
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().IsGlobalUnicast() && p.Addr().Is4() == bind.Is4() {
			return p.Addr()
		}
	}
	return netip.Addr{}
}

// externalURL is where pods and other hosts reach this server (kube-apiserver's
// ExternalAddress, which its OIDC jwks_uri names): the advertise address, else ServerURL.
func (o *Options) externalURL() string {
	if a := o.advertiseAddress(); a.IsValid() {
		return "https://" + net.JoinHostPort(a.String(), strconv.Itoa(o.SecurePort))
	}
	return o.ServerURL()
}

// ServerURL is the URL clients on this host use to reach the API.
func (o *Options) ServerURL() string {
	host := o.BindAddress
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(o.SecurePort))
}

// Run serves the API and runs the in-process components until ctx ends. It returns after
// every goroutine it started has: the servers, informers, leases, scheduler and controllers
// stop with ctx (or with Run's own failure) and are waited for before the store closes.
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := o.Log
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	ca, err := pki.EnsureCA(PKIDir(o.DataDir))
	if err != nil {
		return err
	}
	st, err := openStore(ctx, o, log)
	if err != nil {
		return err
	}
	defer st.Close()
	var running sync.WaitGroup
	defer running.Wait()
	defer cancel() // before the wait: what runs stops with ctx
	// By time on both engines, as kube-apiserver, which clients wait for (a continue token
	// expires within two intervals); bolt also trims its log to WatchHistory changes.
	running.Go(func() { st.CompactHistory(ctx, cmp.Or(o.CompactionInterval, DefaultCompactionInterval)) })

	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics.MustRegister(st.Collectors()...)
	reg, err := builtin.Registry()
	if err != nil {
		return err
	}
	if cs, ok := reg.Lookup(corev1.SchemeGroupVersion.WithResource("componentstatuses")); ok {
		cs.Computed = componentStatuses(st)
	}
	ranges, err := serviceRanges(st, o.ServiceRange)
	if err != nil {
		return err
	}
	nodeTransport, err := kubeletClientTransport(ca)
	if err != nil {
		return err
	}
	metricsAPI, err := metricsExtension(ca, o, nodeTransport, log)
	if err != nil {
		return err
	}
	// The API server's own loopback identity, in system:masters as kube-apiserver's is:
	// its authorization and admission caches and the bootstrap policy go through it.
	loopback, err := loopbackConfig(ca, o.ServerURL(), "kube-apiserver", "system:apiserver", []string{"system:masters"})
	if err != nil {
		return err
	}
	privileged, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return err
	}
	// The process's one informer factory: admission, authorization, the controllers and the
	// scheduler read one cache per kind, filled through the API server's own identity as
	// kube-apiserver's shared informers are. No reader needs managed fields: not cached.
	shared := informers.NewSharedInformerFactoryWithOptions(privileged, 0, informers.WithTransform(trim.ManagedFields))
	defer func() { cancel(); shared.Shutdown() }() // Shutdown waits for the informers ctx stops
	chain, admissionInformers, policies, err := admissionChain(st, reg, privileged, loopback, shared)
	if err != nil {
		return err
	}
	// CustomResourceDefinitions' conversion webhooks reach their Services as the admission
	// webhooks do.
	webhookServices, err := webhook.NewServiceResolver(shared)
	if err != nil {
		return err
	}
	converters, err := conversion.NewCRConverterFactory(webhookServices, nil)
	if err != nil {
		return err
	}
	var bootstrapped atomic.Bool // the authorizer's caches filled and the bootstrap policy reconciled (guard.start)
	srv := apiserver.New(apiserver.Config{Store: st, Registry: reg, Metrics: metrics, Log: log,
		Ranges: ranges, AdvertiseAddress: o.advertiseAddress(), SecurePort: o.SecurePort, MasterLeaseTTL: o.MasterLeaseTTL, NodeTransport: nodeTransport, NodeAddressTypes: nodeAddressTypes(o.KubeletPreferredAddressTypes),
		Extensions: []apiserver.Extension{metricsAPI}, Limits: o.Limits, Admission: chain, Profiling: o.Profiling,
		ReadyChecks: []healthz.HealthChecker{healthz.NamedCheck("poststarthook/rbac/bootstrap-roles", func(*http.Request) error {
			if !bootstrapped.Load() {
				return errors.New("not finished")
			}
			return nil
		})}})
	if err := srv.Bootstrap(ctx); err != nil {
		return err
	}
	// Its lease and address go before the store closes (the deferred Close runs after).
	reconcileCtx, stopReconciling := context.WithCancel(ctx)
	reconciled := make(chan struct{})
	go func() { defer close(reconciled); srv.RunEndpointReconciler(reconcileCtx) }()
	defer func() { stopReconciling(); <-reconciled }()

	tokens := authn.Tokens{}
	if o.TokenFile != "" {
		if tokens, err = authn.LoadTokenFile(o.TokenFile); err != nil {
			return fmt.Errorf("--token-auth-file: %w", err)
		}
	}
	tlsCfg, err := servingTLS(ctx, &running, ca, o)
	if err != nil {
		return err
	}
	if err := ca.WriteKubeconfig(AdminKubeconfig(o.DataDir), o.ServerURL(), "admin", []string{"system:masters"}); err != nil {
		return err
	}
	g, err := newGuard(o, privileged, shared, srv, tokens, &bootstrapped)
	if err != nil {
		return err
	}
	if err := policies.Start(ctx, g.authz); err != nil {
		return err
	}
	defer g.auditor.Close()
	addr := net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort))
	errc := make(chan error, 1)
	running.Go(func() { errc <- srv.ListenAndServeTLS(ctx, addr, tlsCfg, g.handler) })
	log.Info("serving the Kubernetes API", "address", addr, "kubeconfig", AdminKubeconfig(o.DataDir))
	admissionInformers.Start(ctx)
	if err := apiextensions.Start(ctx, loopback, apiextensions.NewRegistryServed(reg, converters), srv.OpenAPI(), metrics, log.With("component", "apiextensions")); err != nil {
		return err
	}
	if err := apiservices.Start(ctx, loopback, shared, log.With("component", "apiservices")); err != nil {
		return err
	}
	// AdminNetworkPolicy and BaselineAdminNetworkPolicy, which minilet enforces, are served
	// from the start as distributions enforcing them carry them: no manifest to fetch.
	crds, err := crdclient.NewForConfig(loopback)
	if err != nil {
		return err
	}
	adminCRDs := make(chan struct{}) // closed once they are served: readiness waits for it
	running.Go(func() { installAdminPolicyCRDs(ctx, crds, adminCRDs, log) })
	runIdentityLease(ctx, &running, privileged, o.hostname(), log.With("component", "apiserver-identity"))
	runLegacyTokenTracking(ctx, &running, privileged, log.With("component", "legacy-token-tracking"))
	if err := g.start(ctx, privileged, o); err != nil {
		return err
	}

	// Each in-process component has its own identity, authorized by its bootstrap role
	// (system:kube-controller-manager and the system:controller:* roles,
	// system:kube-scheduler), as kube-controller-manager and kube-scheduler are.
	controllerManager, err := loopbackConfig(ca, o.ServerURL(), "kube-controller-manager", auth.ControllerManagerUser, nil)
	if err != nil {
		return err
	}
	schedulerCfg, err := loopbackConfig(ca, o.ServerURL(), "kube-scheduler", auth.SchedulerUser, nil)
	if err != nil {
		return err
	}
	if err := runComponents(ctx, &running, shared, controllerManager, schedulerCfg, ca, g.tokens, o, metrics, log); err != nil {
		return err
	}
	if o.Ready != nil {
		running.Go(func() {
			callWhenServing(ctx, controllerManager, func() {
				select {
				case <-adminCRDs:
					o.Ready()
				case <-ctx.Done():
				}
			})
		})
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return <-errc
	}
}

// callWhenServing calls ready once the API server answers /readyz through its own listener
// and TLS, as any client would reach it.
func callWhenServing(ctx context.Context, cfg *rest.Config, ready func()) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return // the same config already made the components' clients
	}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
	if err == nil {
		ready()
	}
}

// installAdminPolicyCRDs installs package admincrd's definitions once the server answers
// and closes served when they are Established, so that a client told the server is ready
// can apply an AdminNetworkPolicy at once. Failures are logged, at most every few seconds.
func installAdminPolicyCRDs(ctx context.Context, crds crdclient.Interface, served chan<- struct{}, log *slog.Logger) {
	backoff := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 5 * time.Second}
	attempts := 0
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := admincrd.Install(ctx, crds.ApiextensionsV1())
		if err == nil {
			err = admincrd.Established(ctx, crds.ApiextensionsV1())
		}
		if attempts++; err != nil && attempts > 6 { // past the first ~3 s of start-up
			log.Warn("admin network policy definitions not served yet", "err", err)
		}
		return err == nil, nil
	})
	if err == nil {
		close(served)
	}
}

// mapperResetPeriod is how often the controllers' RESTMapper forgets what discovery said
// (kube-controller-manager's 30 s).
const mapperResetPeriod = 30 * time.Second

// runComponents starts the scheduler and the controllers as API clients. They read the
// process's shared informers; the controllers write as the controller manager (cfg), the
// scheduler (its bindings, pod status and leases) as itself. What they run is counted in
// running.
func runComponents(ctx context.Context, running *sync.WaitGroup, factory informers.SharedInformerFactory, cfg, schedulerCfg *rest.Config, ca *pki.CA, legacyTokens serviceaccounttoken.Issuer, o Options, metrics prometheus.Registerer, log *slog.Logger) error {
	enabled, err := enabledControllers(o.Controllers)
	if err != nil {
		return err
	}
	schedConf, err := scheduler.LoadConfiguration(o.SchedulerConfig)
	if err != nil {
		return err
	}
	schedMetrics := scheduler.NewMetrics(metrics)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(eventsink.New(ctx, client.CoreV1()))
	running.Go(func() { <-ctx.Done(); broadcaster.Shutdown() })
	// One mapper for the controllers, forgotten every 30 s as kube-controller-manager resets
	// its shared RESTMapper (and read again on a miss): CRDs' kinds are found.
	mapper := discovered.Mapper(client.Discovery())
	running.Go(func() { wait.Until(mapper.Reset, mapperResetPeriod, ctx.Done()) })
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(client.Discovery()))
	if err != nil {
		return err
	}
	cc := &ControllerContext{Config: cfg, Client: client, Metadata: md, Informers: factory, Mapper: mapper, Scales: scales, Options: o, Log: log,
		RootCA: ca.CertPEM, CA: ca, LegacyTokens: legacyTokens, broadcaster: broadcaster, running: running}
	identity := electionIdentity(o.hostname())
	// Informers run for the whole process (a standby's caches stay warm; admission's and
	// authorization's run from the start); the components run while this miniapi leads,
	// and start afresh if it leads again.
	whileLeading(ctx, running, client, o.LeaderElection, "kube-controller-manager", identity, log, func(lctx context.Context) {
		if err := startControllers(lctx, cc, enabled); err != nil {
			log.Error("controllers did not start", "err", err)
			return
		}
		factory.Start(ctx.Done())
	})
	schedClient, err := kubernetes.NewForConfig(schedulerCfg)
	if err != nil {
		return err
	}
	// kube-scheduler records events.k8s.io Events (a series for repeats), not core ones.
	schedEvents := events.NewEventBroadcasterAdapterWithContext(ctx, schedClient)
	schedEvents.StartRecordingToSink(ctx.Done())
	running.Go(func() { <-ctx.Done(); schedEvents.Shutdown() })
	schedRecorder := func(name string) events.EventRecorder { return schedEvents.NewRecorder(name) }
	whileLeading(ctx, running, schedClient, o.LeaderElection, "kube-scheduler", identity, log, func(lctx context.Context) {
		sched, err := scheduler.New(scheduler.Config{Client: schedClient, Informers: factory, Recorder: schedRecorder,
			Log: log.With("component", "scheduler"), Metrics: schedMetrics, Configuration: schedConf})
		if err != nil {
			log.Error("scheduler did not start", "err", err)
			return
		}
		factory.Start(ctx.Done())
		sched.Run(lctx)
	})
	return nil
}

// hostname is --hostname-override, else the host's name.
func (o Options) hostname() string {
	if o.HostnameOverride != "" {
		return o.HostnameOverride
	}
	h, _ := os.Hostname()
	return h
}

// servingTLS issues the serving certificate for the bind address, loopback and --tls-san
// names (re-issued at every start so new names take effect, and before it expires while
// ctx lasts, on a goroutine counted in running) and asks clients for certificates signed
// by the cluster CA.
func servingTLS(ctx context.Context, running *sync.WaitGroup, ca *pki.CA, o Options) (*tls.Config, error) {
	// kubernetes.default.svc.cluster.local is also the default issuer's host, where pods
	// fetch the OIDC discovery document (kubeadm names it for the same reason).
	hosts := []string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if ip := net.ParseIP(o.BindAddress); ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, o.BindAddress)
	}
	if a := o.advertiseAddress(); a.IsValid() {
		hosts = append(hosts, a.String())
	}
	if h := o.hostname(); h != "" {
		hosts = append(hosts, h)
	}
	// Pods reach the API at the `kubernetes` Service's cluster IP, the range's first.
	if p, err := netip.ParsePrefix(o.ServiceRange); err == nil {
		hosts = append(hosts, p.Masked().Addr().Next().String())
	}
	for _, san := range o.TLSSANs {
		hosts = append(hosts, strings.TrimSpace(san))
	}
	serving, err := newServingCert(func() (tls.Certificate, error) {
		pair, err := ca.IssueServing("miniapi", hosts)
		if err != nil {
			return tls.Certificate{}, err
		}
		return pair.TLSCertificate()
	}, o.Log)
	if err != nil {
		return nil, err
	}
	running.Go(func() { serving.run(ctx) })
	return &tls.Config{
		GetCertificate: serving.get,
		ClientAuth:     tls.VerifyClientCertIfGiven,
		ClientCAs:      ca.CertPool(),
		MinVersion:     tls.VersionTLS12,
	}, nil
}

// loopbackConfig is an in-memory client identity for in-process components. Its user
// agent names the Kubernetes component it stands for, as theirs do, so what it writes is
// managed by "kube-controller-manager" or "kube-scheduler" (the field manager defaults to
// the agent's name), as on a Kubernetes cluster.
func loopbackConfig(ca *pki.CA, server, component, user string, groups []string) (*rest.Config, error) {
	pair, err := ca.IssueClient(user, groups)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM, CertData: pair.CertPEM, KeyData: pair.KeyPEM},
		QPS:             2000,
		Burst:           4000,
		UserAgent:       fmt.Sprintf("%s/%s (%s/%s) minik8s", component, discovery.KubernetesVersion, goruntime.GOOS, goruntime.GOARCH),
		// As kube-apiserver's and kube-controller-manager's clients: the warnings meant for
		// users (v1 Endpoints' deprecation, on each of the endpoints controller's writes)
		// are not logged.
		WarningHandler: rest.NoWarnings{},
	}, nil
}

// nodeRanges are the node IPAM ranges the options give, with the defaults (clusterdefaults)
// filled in, the Services' range kept from nodes.
func (o *Options) nodeRanges() (nodeipam.Ranges, error) {
	ranges, err := nodeipam.ParseRanges(cmp.Or(o.ClusterCIDR, clusterdefaults.ClusterCIDR), cmp.Or(o.NodeCIDRMaskSize, clusterdefaults.NodeCIDRMaskSize))
	if services, perr := netip.ParsePrefix(o.ServiceRange); err == nil && perr == nil {
		ranges = ranges.WithoutServices(services) // a bad one is refused with the options
	}
	return ranges, err
}

// nodeAddressTypes are --kubelet-preferred-address-types as types, unchecked as
// kube-apiserver's: a name no node reports matches no address.
func nodeAddressTypes(names []string) []corev1.NodeAddressType {
	types := make([]corev1.NodeAddressType, 0, len(names))
	for _, n := range names {
		types = append(types, corev1.NodeAddressType(n))
	}
	return types
}
