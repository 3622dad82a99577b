// Package agent is minilet's brain: it registers the node and keeps its
// status and lease fresh, and runs the pods bound to the node through the
// container runtime and CNI, reporting their status back to the API.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/agent/apparmor"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/dns"
	"github.com/minik8s/minik8s/pkg/agent/eviction"
	"github.com/minik8s/minik8s/pkg/agent/hostport"
	"github.com/minik8s/minik8s/pkg/agent/imagegc"
	"github.com/minik8s/minik8s/pkg/agent/nodefeatures"
	"github.com/minik8s/minik8s/pkg/agent/nodematch"
	"github.com/minik8s/minik8s/pkg/agent/nodestatus"
	"github.com/minik8s/minik8s/pkg/agent/pleg"
	"github.com/minik8s/minik8s/pkg/agent/podsource"
	"github.com/minik8s/minik8s/pkg/agent/podsync"
	"github.com/minik8s/minik8s/pkg/agent/podworkers"
	"github.com/minik8s/minik8s/pkg/agent/resourcefit"
	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/agent/sysctl"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
	"github.com/minik8s/minik8s/pkg/runtime/pauseimage"
	"github.com/minik8s/minik8s/pkg/stats"
)

const (
	// housekeepingPeriod: workers of vanished pods are retired and orphans removed this often.
	housekeepingPeriod = 10 * time.Second
	// relistPeriod: container exits are noticed this fast (the kubelet's PLEG period).
	relistPeriod = time.Second
	// pauseImageRetry: how often importing the pause image is retried.
	pauseImageRetry = 5 * time.Second
	// finishedMemory: how long a torn-down pod is remembered, so stale events cannot restart it.
	finishedMemory = 10 * time.Minute
)

// Agent is one node's agent.
type Agent struct {
	cfg      Config
	client   kubernetes.Interface
	rt       podsync.Runtime
	recorder record.EventRecorder
	clock    clock.WithTicker
	log      *slog.Logger
	metrics  *metrics

	sync             *podsync.Syncer                 // runs the pods: their sandboxes, containers and status
	services         informers.SharedInformerFactory // the Services, for containers' variables
	nodeInformer     informers.SharedInformerFactory // this node's Node, for the admission of pods
	nodes            corelisters.NodeLister
	volumes          *volumes.Manager
	capacity         corev1.ResourceList
	allocatable      corev1.ResourceList // capacity less --system-reserved, --kube-reserved and the hard eviction thresholds
	podsCgroup       corev1.ResourceList // the pods' cgroup's size: allocatable with what eviction holds back
	pauseImageReady  atomic.Bool
	lastHousekeeping atomic.Int64       // unix nanoseconds
	pods             *podsource.Sources // the pods the node runs: static and from the API
	workers          *podworkers.Workers[*podsync.PodState]
	stats            StatsSource // nil: no usage figures (tests)
	pressure         *stats.Pressure
	admitters        []admitter // asked, in order, before a pod new to the node starts
	node             *nodestatus.Manager
}

// New makes an agent for the node cfg describes, driving deps. Every timing (back-off,
// housekeeping, pod workers, probes, lease, status times) reads deps.Clock.
func New(cfg Config, deps Dependencies) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Client == nil || deps.Recorder == nil || deps.Runtime == nil || deps.Network == nil {
		return nil, errors.New("the agent needs an API client, an event recorder, a runtime and a network")
	}
	clk := deps.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	resolvConf, reason := dns.NodeResolvConf(cfg.ResolvConf, dns.SystemdResolvConf)
	if reason != "" {
		log.Info("pods get the node's resolver configuration from "+resolvConf, "reason", reason)
	}
	cfg.ResolvConf = resolvConf
	a := &Agent{
		cfg:      cfg,
		client:   deps.Client,
		recorder: deps.Recorder,
		rt:       deps.Runtime,
		stats:    deps.Stats,
		clock:    clk,
		log:      log,
		metrics:  newMetrics(),
	}
	a.pressure = a.newPressure()
	sysctls, err := sysctl.NewAdmission(cfg.AllowedUnsafeSysctls)
	if err != nil {
		return nil, err
	}
	fit := resourcefit.Admission{Allocatable: func() corev1.ResourceList { return a.allocatable }, Others: a.admittedPods}
	// In the kubelet's order: eviction, sysctls, then its predicate admission (OS,
	// supplemental groups policy, resources, node affinity, host ports, NoExecute taints),
	// AppArmor, then, as the kubelet's last handler, declared features.
	a.admitters = []admitter{eviction.Admission{Pressure: a.pressure, Now: clk.Now}, sysctls, osAdmission{},
		groupsPolicyAdmission{Node: a.nodeForAdmission}, fit,
		nodematch.Affinity{Node: a.nodeForAdmission}, hostport.Admission{Others: a.admittedPods}, nodematch.Taints{Node: a.nodeForAdmission},
		apparmor.Admission{Enabled: apparmor.HostEnabled}, nodefeatures.Admission{}}
	// The node's resources are measured once, before any pod is synced; minilet lowers its
	// own OOM score first, as the kubelet's server does before it makes the kubelet.
	floor, err := cm.ProtectSelf()
	if err != nil {
		log.Warn("OOM scores of containers are kept at 0 or above", "err", err)
	}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil { // its filesystem is the pods' ephemeral storage
		return nil, fmt.Errorf("create %s: %w", cfg.RootDir, err)
	}
	if a.capacity, err = nodestatus.HostCapacity(cfg.RootDir, cfg.NodeCgroup); err != nil {
		return nil, err
	}
	systemReserved, _ := nodestatus.ParseReserved("system-reserved", cfg.SystemReserved) // checked by Validate
	kubeReserved, _ := nodestatus.ParseReserved("kube-reserved", cfg.KubeReserved)
	hard, _ := stats.ParseThresholds(cfg.Eviction.Hard) // checked by Validate
	// The pods' cgroup may use what eviction holds back: crossing the threshold evicts a
	// pod before the kernel kills one (the kubelet's GetNodeAllocatableAbsolute).
	a.podsCgroup = nodestatus.Allocatable(a.capacity, systemReserved, kubeReserved, nodestatus.HugePagesMemory(a.capacity))
	a.allocatable = nodestatus.Allocatable(a.podsCgroup, nodestatus.EvictionReserved(a.capacity, hard))
	a.volumes = volumes.New(cfg.PodsDir(), a.client, func() corev1.ResourceList { return a.allocatable }, clk)
	// The node as the API has it now (labels, taints), as the kubelet's node informer.
	a.nodeInformer = informers.NewSharedInformerFactoryWithOptions(deps.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", cfg.NodeName).String()
	}))
	a.nodes = a.nodeInformer.Core().V1().Nodes().Lister()
	var services podsync.Services
	a.services, services = podsync.NewServiceInformer(deps.Client)
	a.sync = podsync.New(podsync.Config{
		NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, CgroupRoot: cfg.CgroupRoot,
		InsecureRegistries: cfg.InsecureRegistries, PodMaxPids: cfg.PodMaxPids,
		RootDir: cfg.RootDir, PodsDir: cfg.PodsDir(), LogsDir: cfg.logsDir(), NetNSDir: cfg.netnsDir(),
		SeccompDir: cfg.seccompDir(), DNS: cfg.dnsConfigurer(),
		OOMFloor: floor, Capacity: a.capacity, Allocatable: a.allocatable,
	}, podsync.Deps{
		Client: deps.Client, Recorder: deps.Recorder, Runtime: deps.Runtime, Network: deps.Network,
		Clock: clk, Log: log, Volumes: a.volumes, Statuses: status.NewWriter(a.client, func(p *corev1.Pod) *corev1.Pod { return a.pods.MirrorOf(p) }),
		ObserveProbe: a.metrics.probeObserver, Wake: func(uid types.UID) { a.workers.Wake(uid) }, // workers are made on the syncer
		Fits: fit.Admit, Services: services,
	})
	a.workers = podworkers.New(a.clock, a.sync, a.metrics.observeSync, a.sync.NewPodState, a.log)
	a.pods = podsource.New(podsource.Config{
		NodeName: cfg.NodeName, ManifestPath: cfg.PodManifestPath, FileCheckFrequency: cfg.FileCheckFrequency,
		Client: deps.Client, Workers: admittingWorkers{a}, NodeEvent: a.nodeEvent, Log: log,
	})
	return a, nil
}

// Run registers the node and runs its pods until ctx ends. Pods keep
// running when it returns; a new Run adopts them.
func (a *Agent) Run(ctx context.Context) error {
	for _, dir := range []string{a.cfg.netnsDir(), a.cfg.logsDir(), a.cfg.CNICacheDir(), a.cfg.CNINetworksDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	a.nodeEvent(corev1.EventTypeNormal, "Starting", "Starting kubelet.")
	if err := a.sync.BindNodeNetNS(); err != nil {
		return err
	}
	if err := cm.EnsureNodeCgroup(a.cfg.CgroupRoot, a.podsCgroup.Cpu().MilliValue(), a.podsCgroup.Memory().Value()); err != nil {
		return fmt.Errorf("pods' cgroup under --cgroup-root %s: %w", a.cfg.CgroupRoot, err)
	}
	a.nodeEvent(corev1.EventTypeNormal, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
	a.node = a.newNodeStatus()

	// Every goroutine started below ends with ctx, and Run returns only once all have.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// The Services are read from the start, as the kubelet's informer: an API pod's
	// containers wait for them (podsync.Syncer.serviceEnv), static pods do not.
	wg.Go(func() {
		a.services.Start(ctx.Done())
		a.nodeInformer.Start(ctx.Done())
		<-ctx.Done()
		a.services.Shutdown()
		a.nodeInformer.Shutdown()
	})
	if a.cfg.HealthzAddr != "" {
		if err := a.serveHealth(ctx, &wg, a.cfg.HealthzAddr); err != nil {
			return err
		}
	}

	if err := a.ensurePauseImage(ctx); err != nil {
		return ignoreCanceled(ctx, err)
	}
	wg.Go(func() { a.workers.Run(ctx) })
	wg.Go(func() { a.sync.RunProbes(ctx) })
	// Static pods start without the API server (how a control plane bootstraps); pods
	// from the API once the node is registered and the informer has synced.
	wg.Go(func() { a.pods.RunFiles(ctx) })
	wg.Go(func() { a.runAPI(ctx) })
	wg.Go(func() { a.pods.RunMirrors(ctx) })
	relister := pleg.New(pleg.Config{Runtime: a.rt, Wake: a.workers.Wake, Running: a.metrics.runningPods,
		Period: relistPeriod, Log: a.log})
	wg.Go(func() { relister.Run(ctx) })
	images := imagegc.New(a.rt, a.cfg.ImageGCHighThreshold, a.cfg.ImageGCLowThreshold, a.clock, a.log, pauseimage.Ref)
	wg.Go(func() { a.runImageGC(ctx, images) })
	if a.stats != nil { // without usage figures there is nothing to evict on
		evictions := a.newEvictionManager(images)
		wg.Go(func() { evictions.Run(ctx) })
	}
	wg.Go(func() { a.watchOOM(ctx) })
	a.runHousekeeping(ctx)
	return nil
}

// runAPI registers the node (retrying while the API server is away), keeps its status
// and lease fresh, and feeds the pods bound to it to the workers.
func (a *Agent) runAPI(ctx context.Context) {
	if err := a.node.Register(ctx); err != nil {
		return // ctx ended
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.node.RunStatus(ctx) })
	wg.Go(func() { a.node.RunLease(ctx) })
	if a.cfg.Ready != nil {
		a.cfg.Ready()
	}
	// Startup reconciliation: what belongs to no pod of this node goes before the
	// workers adopt the rest.
	a.pods.RunAPI(ctx, func(ctx context.Context) {
		if err := a.cleanupOrphans(ctx); err != nil {
			a.log.Error("clean up after earlier runs", "err", err)
		}
	})
}

// nodePods lists the pods this node runs (podsource.Sources.Pods).
func (a *Agent) nodePods() []*corev1.Pod { return a.pods.Pods() }

// runHousekeeping periodically retires workers of pods that vanished, starts one for a
// pod that has none, removes orphans and forgets expired back-offs; each pass proves the
// loop alive. It syncs no pod that has a worker: each worker resyncs its pod itself
// (podworkers), as the kubelet's HandlePodCleanups leaves that to the pod workers' queue.
func (a *Agent) runHousekeeping(ctx context.Context) {
	tick := a.clock.NewTicker(housekeepingPeriod)
	defer tick.Stop()
	for {
		a.lastHousekeeping.Store(a.clock.Now().UnixNano())
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		workers := a.workers.UIDs() // before the listing: a pod added later is not in it
		present := map[string]bool{}
		for _, pod := range a.nodePods() {
			present[string(pod.UID)] = true
			if !a.workers.Known(pod.UID) {
				a.updatePod(pod)
			}
		}
		for uid := range workers {
			if !present[string(uid)] {
				a.workers.Remove(uid)
			}
		}
		if a.pods.Synced() { // until then, every API pod would look like an orphan
			if err := a.cleanupOrphans(ctx); err != nil && ctx.Err() == nil {
				a.log.Error("clean up orphaned pods", "err", err)
			}
			a.pods.SyncMirrors(ctx)
		}
		a.sync.ForgetExpiredBackoffs()
		a.workers.ForgetFinished(a.clock.Now().Add(-finishedMemory))
	}
}

// ensurePauseImage imports the embedded pause image when the runtime lacks
// it, retrying until it works; the node is NotReady until then.
func (a *Agent) ensurePauseImage(ctx context.Context) error {
	for {
		err := a.rt.EnsureImage(ctx, pauseimage.Ref, pauseimage.Open)
		if err == nil {
			a.pauseImageReady.Store(true)
			return nil
		}
		a.log.Error("import pause image, will retry", "image", pauseimage.Ref, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("import pause image %s: %w", pauseimage.Ref, err)
		case <-time.After(pauseImageRetry):
		}
	}
}

// ignoreCanceled turns an error caused by ctx ending into a clean stop.
func ignoreCanceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// watchOOM keeps the runtime's OOM watch running, restarting it when containerd's event
// stream breaks (containerd restarted, say).
func (a *Agent) watchOOM(ctx context.Context) {
	for ctx.Err() == nil {
		if err := a.rt.WatchOOM(ctx); err != nil {
			a.log.Error("watch OOM kills, will retry", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pauseImageRetry):
		}
	}
}
