// Package server is the miniproxy daemon: informers on Services and EndpointSlices feed a
// bounded-frequency runner that syncs the proxier, with kube-proxy's /healthz and metrics.
package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	"github.com/minik8s/minik8s/pkg/proxy/healthcheck"
	"github.com/minik8s/minik8s/pkg/proxy/runner"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// DefaultGCPercent is miniproxy's GOGC unless the environment sets one. The live heap is
// nearly all long-lived (the informers' records, the builder's chains, the snapshot) and
// each change makes a little garbage: at Go's 100 the heap grows to twice the live one over
// a few dozen changes, 72-75 MiB RSS at 10 000 Services against 61-64 at 50, for ~2 ms more
// of the daemon's CPU per change beside the ~50 ms it and iptables-restore take. 25 saves
// 5-7 MiB more for 5-10 ms more per change and double the CPU to the first sync
// (docs/performance.md, "miniproxy: iptables mode").
const DefaultGCPercent = 50

// Options are miniproxy's settings, by kube-proxy's flag names.
type Options struct {
	HostnameOverride string
	ClusterCIDR      string
	ProxyMode        string
	IPVS             IPVSOptions // the --ipvs-* flags, for --proxy-mode ipvs
	MinSyncPeriod    time.Duration
	SyncPeriod       time.Duration
	MasqueradeAll    bool
	MetricsAddress   string
	Profiling        bool // /debug/pprof on the metrics address, as kube-proxy's --profiling
	HealthzAddress   string
	// BindAddressHardFail ends miniproxy, with an Event, when its metrics or healthz server
	// cannot run; false: it logs and tries again (kube-proxy's --bind-address-hard-fail).
	BindAddressHardFail bool
	// LBInterfaces are where this node answers ARP for the LoadBalancer addresses it is
	// elected for (pkg/proxy/l2); none: LoadBalancer addresses answer only on the nodes.
	LBInterfaces []string
	// MemoryLimit is Go's soft memory limit (GOMEMLIMIT) as a quantity ("40Mi"); empty:
	// GOMEMLIMIT's, or none.
	MemoryLimit string
	Ready       func() // called once, after the first successful sync (nil: nothing)
}

// Validate checks the options before anything is touched.
func (o *Options) Validate() error {
	var errs []error
	switch o.ProxyMode {
	case ModeIPTables, "":
		if o.IPVS != (IPVSOptions{}) {
			errs = append(errs, errors.New("--ipvs-scheduler, --ipvs-*-timeout and --ipvs-strict-arp are only used with --proxy-mode ipvs"))
		}
	case ModeIPVS:
		if err := o.ipvsConfig().Validate(); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("--proxy-mode %q: want %q or %q", o.ProxyMode, ModeIPTables, ModeIPVS))
	}
	if o.ClusterCIDR != "" {
		if _, _, err := net.ParseCIDR(o.ClusterCIDR); err != nil {
			errs = append(errs, fmt.Errorf("--cluster-cidr %q: %w", o.ClusterCIDR, err))
		}
	}
	if o.MinSyncPeriod < 0 || o.SyncPeriod <= 0 || o.MinSyncPeriod > o.SyncPeriod {
		errs = append(errs, fmt.Errorf("--min-sync-period %v and --sync-period %v: want 0 <= min <= sync, sync > 0", o.MinSyncPeriod, o.SyncPeriod))
	}
	if len(o.LBInterfaces) > 0 {
		if _, port, err := net.SplitHostPort(o.HealthzAddress); err != nil || port == "0" {
			errs = append(errs, errors.New("--lb-interfaces needs --healthz-bind-address with a port: nodes elect who answers for an address among those whose /healthz answers"))
		}
		if o.ProxyMode == ModeIPVS && !o.IPVS.StrictARP {
			errs = append(errs, errors.New("--lb-interfaces in IPVS mode needs --ipvs-strict-arp: the addresses on kube-ipvs0 are the node's own, and without strict ARP every node's kernel answers ARP for them"))
		}
	}
	if _, err := o.memoryLimit(); err != nil {
		errs = append(errs, err)
	}
	if o.HostnameOverride == "" {
		errs = append(errs, errors.New("--hostname-override is empty and the host name could not be read"))
	}
	for flag, addr := range map[string]string{"--metrics-bind-address": o.MetricsAddress, "--healthz-bind-address": o.HealthzAddress} {
		if addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", flag, addr, err))
		}
	}
	return errors.Join(errs...)
}

// memoryLimit is --memory-limit in bytes, 0 when not given.
func (o *Options) memoryLimit() (int64, error) {
	if o.MemoryLimit == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(o.MemoryLimit)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("--memory-limit %q: want a positive quantity such as 40Mi", o.MemoryLimit)
	}
	return q.Value(), nil
}

// Run proxies until ctx ends.
func Run(ctx context.Context, client *apiclient.Client, o Options, log *slog.Logger) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if limit, _ := o.memoryLimit(); limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
	if err := enableBridgeNetfilter(); err != nil {
		// As kube-proxy: proxying works, but a pod reaching a Service endpoint on its own
		// bridge goes un-NATed until the module is loaded.
		log.Warn("missing br_netfilter module or unset sysctl br-nf-call-iptables; proxy may not work as intended", "err", err)
	}
	// Services another proxy serves (service.kubernetes.io/service-proxy-name) are not ours.
	noOtherProxy, err := labels.NewRequirement("service.kubernetes.io/service-proxy-name", selection.DoesNotExist, nil)
	if err != nil {
		return err
	}
	factory := apiclient.NewInformers(client, func(opts *metav1.ListOptions) { opts.LabelSelector = noOtherProxy.String() }, proxy.Compact)
	services := factory.Services()
	slices := factory.EndpointSlices()
	if err := cleanupOtherMode(ctx, o.ProxyMode, log); err != nil {
		return err
	}
	src := proxy.Records(services.GetIndexer(), slices.GetIndexer())
	proxier, err := newProxier(o, src, log)
	if err != nil {
		return err
	}
	speaker, err := newSpeaker(o, factory, src, log)
	if err != nil {
		return err
	}
	firstSync := make(chan struct{})
	var firstOnce sync.Once
	m := newMetrics()
	node := nodeInformer(client, o.HostnameOverride)
	h := &health{period: o.SyncPeriod, metrics: m, node: func() *corev1.Node {
		obj, _, _ := node.GetStore().GetByKey(o.HostnameOverride)
		n, _ := obj.(*corev1.Node)
		return n
	}}
	// The health check node ports of LoadBalancers with externalTrafficPolicy Local.
	hc := healthcheck.New(o.HostnameOverride, func() bool { return h.healthy(time.Now()) }, log)
	hc.Event = func(svc types.NamespacedName, note string) {
		go func() { // not in the sync's way
			if err := recordServiceHealthcheckFailure(ctx, client, svc, note); err != nil {
				log.Warn("could not record the FailedToStartServiceHealthcheck event", "service", svc, "err", err)
			}
		}()
	}
	defer hc.Close()
	var lastFull time.Time
	var pendingSince time.Time
	var mu sync.Mutex
	var readyOnce sync.Once
	// The window is at most half the sync period, so that the periodic syncs of an idle
	// daemon cannot put the release off for ever.
	idle := newIdleRelease(ctx, min(IdleReleaseWindow, o.SyncPeriod/2), debug.FreeOSMemory)
	syncRules := func() {
		mu.Lock()
		since := pendingSince
		pendingSince = time.Time{}
		mu.Unlock()
		if time.Since(lastFull) >= fullSyncPeriod(o) {
			proxier.ForceFull()
		}
		res, err := proxier.Sync(ctx)
		m.synced(res, err, since)
		// Every sync, even a failed one, leaves garbage: a full one gives it back below,
		// partial ones once they stop coming (not after each: a busy cluster syncs every
		// second, and each release is a forced collection).
		idle.synced(err == nil && res.full)
		if err != nil {
			log.Error("sync of proxy rules failed", "err", err)
			return
		}
		if res.full {
			lastFull = time.Now()
			// A full sync is the peak: it lays out every rule, and the first one follows the
			// informers' first lists, held whole until trimmed. Give that back now (one
			// collection per sync period) instead of keeping it as heap that the partial
			// syncs between two full ones never need.
			debug.FreeOSMemory()
		}
		h.synced(time.Now())
		if err := hc.Sync(src); err != nil {
			log.Error("sync of service health checks failed", "err", err)
		}
		firstOnce.Do(func() { close(firstSync) })
		if o.Ready != nil {
			readyOnce.Do(o.Ready)
		}
		log.Debug("synced proxy rules", append([]any{"full", res.full, "duration", res.duration}, res.log...)...)
	}
	r := runner.New(syncRules, o.MinSyncPeriod, o.SyncPeriod)
	changed := func(counter prometheus.Counter) func(...any) {
		return func(objs ...any) {
			for _, obj := range objs { // before the sync is asked for, so it reads them
				proxier.Changed(obj)
			}
			counter.Inc()
			mu.Lock()
			if pendingSince.IsZero() {
				pendingSince = time.Now()
			}
			mu.Unlock()
			h.queued(time.Now())
			m.queued()
			r.Run()
			if speaker != nil {
				speaker.Changed()
			}
		}
	}
	// This node's zone label, which the topology hints of EndpointSlices are read against,
	// and its address, which loadBalancerSourceRanges are: a change rewrites every Service;
	// the Node's other updates (its status, every few seconds) ask for nothing (kube-proxy's
	// NodeTopologyConfig).
	onNode := func(obj any) {
		var facts proxy.NodeFacts
		if n, ok := obj.(*corev1.Node); ok {
			facts = proxy.NodeFacts{Zone: n.Labels[corev1.LabelTopologyZone], IP: nodeIPv4(n)}
		}
		if proxier.SetNode(facts) {
			m.queued()
			r.Run()
		}
	}
	if _, err := node.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNode, UpdateFunc: func(_, obj any) { onNode(obj) }, DeleteFunc: onNode,
	}); err != nil {
		return err
	}
	go node.Run(ctx.Done())
	for _, inf := range []struct {
		informer cache.SharedIndexInformer
		counter  prometheus.Counter
	}{{services, m.serviceChanges}, {slices, m.endpointChanges}} {
		on := changed(inf.counter)
		if _, err := inf.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { on(obj) }, DeleteFunc: func(obj any) { on(obj) }, UpdateFunc: func(old, obj any) { on(old, obj) },
		}); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	go func() { // kube-proxy's birth cry, once its informers have started
		if err := recordStarting(ctx, client, o.HostnameOverride); err != nil {
			log.Warn("could not record the Starting event", "err", err)
		}
	}()
	synced := []cache.InformerSynced{services.HasSynced, slices.HasSynced, node.HasSynced}
	if speaker != nil {
		synced = append(synced, speaker.nodesSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	failed := make(chan serverFailure, 2)
	for _, s := range []httpServer{
		metricsServer(o.MetricsAddress, m.handler(cmp.Or(o.ProxyMode, ModeIPTables), o.Profiling)),
		healthzServer(o.HealthzAddress, h.handler()),
	} {
		if s.addr != "" {
			s.start(ctx, o.BindAddressHardFail, serverRetryPeriod, failed, log)
		}
	}
	log.Info("miniproxy syncing Services", "mode", cmp.Or(o.ProxyMode, ModeIPTables), "node", o.HostnameOverride, "clusterCIDR", o.ClusterCIDR)
	go r.Loop(ctx)
	if speaker != nil {
		// Answering ARP only once this node's rules are written: before, it would draw
		// traffic it drops.
		go func() {
			select {
			case <-firstSync:
				speaker.Run(ctx)
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case f := <-failed:
		return recordServerFailure(ctx, client, o.HostnameOverride, f)
	}
}

// nodeInformer watches the Node name alone, keeping only its labels (its zone), its
// addresses and what says whether it is eligible for load balancers' traffic (deletion,
// taints).
func nodeInformer(client *apiclient.Client, name string) cache.SharedIndexInformer {
	lw := cache.NewListWatchFromClient(client.Core, "nodes", metav1.NamespaceAll, fields.OneTermEqualSelector("metadata.name", name))
	inf := cache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, cache.Indexers{})
	utilruntime.Must(inf.SetTransform(func(obj any) (any, error) {
		if n, ok := obj.(*corev1.Node); ok {
			return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, ResourceVersion: n.ResourceVersion, Labels: n.Labels,
				DeletionTimestamp: n.DeletionTimestamp}, Spec: corev1.NodeSpec{Taints: n.Spec.Taints},
				Status: corev1.NodeStatus{Addresses: n.Status.Addresses}}, nil
		}
		return obj, nil
	}))
	return inf
}

// nodeIPv4 is the node's address the IPv4 proxier knows it by, as kube-proxy's node IP
// (GetNodeHostIPs): its first IPv4 InternalIP, else its first IPv4 ExternalIP; "" if none.
func nodeIPv4(n *corev1.Node) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range n.Status.Addresses {
			if ip := net.ParseIP(a.Address); a.Type == t && ip != nil && ip.To4() != nil {
				return ip.String()
			}
		}
	}
	return ""
}

func serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// health answers /healthz and /livez as kube-proxy does: healthy unless a change has waited
// for a sync longer than twice the sync period; /healthz also says whether the node is
// eligible for load balancers' traffic.
type health struct {
	period  time.Duration
	node    func() *corev1.Node // this node as last seen; nil if it is gone
	metrics *metrics            // counts the answers
	mu      sync.Mutex
	last    time.Time // last successful sync
	oldest  time.Time // oldest change not yet synced (zero: none)
}

func (h *health) queued(t time.Time) {
	h.mu.Lock()
	if h.oldest.IsZero() {
		h.oldest = t
	}
	h.mu.Unlock()
}

func (h *health) synced(t time.Time) {
	h.mu.Lock()
	h.last, h.oldest = t, time.Time{}
	h.mu.Unlock()
}

// healthy: synced once, and no change has waited two sync periods at now.
func (h *health) healthy(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.healthyLocked(now)
}

func (h *health) healthyLocked(now time.Time) bool {
	return !h.last.IsZero() && (h.oldest.IsZero() || now.Sub(h.oldest) < 2*h.period)
}

// proxyHealth is kube-proxy's ProxyHealth, its fields in its order.
type proxyHealth struct {
	LastUpdated  time.Time                `json:"lastUpdated"`
	CurrentTime  time.Time                `json:"currentTime"`
	NodeEligible *bool                    `json:"nodeEligible,omitempty"`
	Healthy      bool                     `json:"healthy"`
	Status       map[string]proxierHealth `json:"status,omitempty"`
}

// proxierHealth is one IP family's entry of kube-proxy's "status".
type proxierHealth struct {
	LastUpdated time.Time `json:"lastUpdated"`
	Healthy     bool      `json:"healthy"`
}

// report is the health at now of our one proxier, IPv4.
func (h *health) report(now time.Time) proxyHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	healthy := h.healthyLocked(now)
	return proxyHealth{LastUpdated: h.last, CurrentTime: now, Healthy: healthy,
		Status: map[string]proxierHealth{ipFamily: {LastUpdated: h.last, Healthy: healthy}}}
}

// nodeEligible is kube-proxy's NodeEligible: the node exists, is not being deleted and
// is not tainted for deletion by the cluster autoscaler.
func nodeEligible(n *corev1.Node) bool {
	return n != nil && n.DeletionTimestamp.IsZero() &&
		!slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == toBeDeletedTaint })
}

// toBeDeletedTaint is the cluster autoscaler's taint of a node it is about to remove.
const toBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

func (h *health) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		report := h.report(time.Now())
		eligible := nodeEligible(h.node())
		report.NodeEligible = &eligible
		writeHealth(w, report, report.Healthy && eligible, h.metrics.healthzTotal)
	})
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		report := h.report(time.Now())
		writeHealth(w, report, report.Healthy, h.metrics.livezTotal)
	})
	return mux
}

// writeHealth answers 200 if ok, 503 if not, counted in answers by code, with the report as
// kube-proxy writes it: the top-level lastUpdated of an ok answer is now (older releases'
// meaning: the loop ran).
func writeHealth(w http.ResponseWriter, report proxyHealth, ok bool, answers *prometheus.CounterVec) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	code := http.StatusOK
	if ok {
		report.LastUpdated = report.CurrentTime
	} else {
		code = http.StatusServiceUnavailable
	}
	answers.WithLabelValues(strconv.Itoa(code)).Inc()
	w.WriteHeader(code)
	data, _ := json.Marshal(report)
	_, _ = w.Write(data)
}

// metrics are kube-proxy's, by name. Those of one proxier's syncs carry kube-proxy's
// ip_family label (v1.33 on: one proxier per family); the informers' change counters,
// shared by both families, do not.
type metrics struct {
	registry                                *prometheus.Registry
	duration, fullDuration, partialDuration *prometheus.HistogramVec
	programming                             *prometheus.HistogramVec
	lastTimestamp, lastQueued               *prometheus.GaugeVec
	rules                                   *prometheus.GaugeVec
	noLocalEndpoints                        *prometheus.GaugeVec // by traffic_policy
	restoreFailures                         *prometheus.CounterVec
	partialRestoreFailures                  *prometheus.CounterVec // iptables partial syncs that fell back to a full one
	serviceChanges, endpointChanges         prometheus.Counter
	healthzTotal, livezTotal                *prometheus.CounterVec // answers of /healthz and /livez by code
}

// ipFamily is the ip_family label of our syncs: miniproxy is IPv4 only.
var ipFamily = string(corev1.IPv4Protocol)

func newMetrics() *metrics {
	buckets := prometheus.ExponentialBuckets(0.001, 2, 15)
	family := []string{"ip_family"}
	m := &metrics{
		registry: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kubeproxy_sync_proxy_rules_duration_seconds",
			Help: "SyncProxyRules latency in seconds", Buckets: buckets}, family),
		fullDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kubeproxy_sync_full_proxy_rules_duration_seconds",
			Help: "SyncProxyRules latency in seconds for full resyncs", Buckets: buckets}, family),
		partialDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kubeproxy_sync_partial_proxy_rules_duration_seconds",
			Help: "SyncProxyRules latency in seconds for partial resyncs", Buckets: buckets}, family),
		programming: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kubeproxy_network_programming_duration_seconds",
			Help: "In Cluster Network Programming Latency in seconds", Buckets: buckets}, family),
		lastTimestamp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time proxy rules were successfully synced"}, family),
		lastQueued: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
			Help: "The last time a sync of proxy rules was queued"}, family),
		noLocalEndpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
			Help: "Number of services with a Local traffic policy and no endpoints"}, []string{"traffic_policy", "ip_family"}),
		rules: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubeproxy_sync_proxy_rules_iptables_total",
			Help: "Total number of iptables rules owned by kube-proxy"}, []string{"table", "ip_family"}),
		serviceChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_service_changes_total",
			Help: "Cumulative proxy rules Service changes"}),
		endpointChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_endpoint_changes_total",
			Help: "Cumulative proxy rules Endpoint changes"}),
		restoreFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
			Help: "Cumulative proxy iptables restore failures"}, family),
		partialRestoreFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total",
			Help: "Cumulative proxy iptables partial restore failures"}, family),
		healthzTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_proxy_healthz_total",
			Help: "Cumulative proxy healthz HTTP status"}, []string{"code"}),
		livezTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_proxy_livez_total",
			Help: "Cumulative proxy livez HTTP status"}, []string{"code"}),
	}
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.duration, m.fullDuration, m.partialDuration, m.programming, m.lastTimestamp, m.lastQueued, m.noLocalEndpoints, m.rules,
		m.serviceChanges, m.endpointChanges, m.restoreFailures, m.partialRestoreFailures, m.healthzTotal, m.livezTotal)
	return m
}

// synced records one sync: its result, or its failure; since is when the oldest change
// it wrote was noticed (zero: none).
func (m *metrics) synced(res syncResult, err error, since time.Time) {
	if res.partialFailed {
		m.restoreFailures.WithLabelValues(ipFamily).Inc()
		m.partialRestoreFailures.WithLabelValues(ipFamily).Inc()
	}
	if err != nil {
		m.restoreFailures.WithLabelValues(ipFamily).Inc()
		return
	}
	if res.full {
		m.fullDuration.WithLabelValues(ipFamily).Observe(res.duration.Seconds())
	} else {
		m.partialDuration.WithLabelValues(ipFamily).Observe(res.duration.Seconds())
	}
	m.duration.WithLabelValues(ipFamily).Observe(res.duration.Seconds())
	m.lastTimestamp.WithLabelValues(ipFamily).SetToCurrentTime()
	m.rules.WithLabelValues("filter", ipFamily).Set(float64(res.filterRules))
	m.rules.WithLabelValues("nat", ipFamily).Set(float64(res.natRules))
	m.noLocalEndpoints.WithLabelValues("internal", ipFamily).Set(float64(res.noLocalInternal))
	m.noLocalEndpoints.WithLabelValues("external", ipFamily).Set(float64(res.noLocalExternal))
	if !since.IsZero() {
		m.programming.WithLabelValues(ipFamily).Observe(time.Since(since).Seconds())
	}
}

// queued records that a change asked for a sync, as kube-proxy's Sync.
func (m *metrics) queued() { m.lastQueued.WithLabelValues(ipFamily).SetToCurrentTime() }

// handler serves the metrics address as kube-proxy's: /metrics, /healthz (the generic
// "ok" of a server with no checks), /proxyMode (mode) and, with profiling, /debug/pprof.
func (m *metrics) handler(mode string, profiling bool) http.Handler {
	mux := http.NewServeMux()
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	text := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_, _ = io.WriteString(w, body)
		}
	}
	mux.Handle("/healthz", text("ok"))
	mux.Handle("/proxyMode", text(mode))
	return mux
}

// bridgeNetfilter makes bridged traffic pass iptables: a pod reaching a Service whose
// endpoint sits on the same bridge is DNATed only if it does.
const bridgeNetfilter = "/proc/sys/net/bridge/bridge-nf-call-iptables"

func enableBridgeNetfilter() error {
	cur, err := os.ReadFile(bridgeNetfilter)
	if err != nil {
		return fmt.Errorf("%s: %w (load the br_netfilter module: modprobe br_netfilter)", bridgeNetfilter, err)
	}
	if strings.TrimSpace(string(cur)) == "1" {
		return nil
	}
	if err := os.WriteFile(bridgeNetfilter, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("enable %s: %w", bridgeNetfilter, err)
	}
	return nil
}
