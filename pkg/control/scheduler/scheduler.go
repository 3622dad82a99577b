// Package scheduler places pending pods on nodes as kube-scheduler does: a scheduling queue
// (queue), a cache of nodes and placed pods fed by the shared informers (cache), profiles
// of filter and score plugins (framework, plugins/...), preemption, and asynchronous
// binding. It is a client-go program like every component but the API server.
package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minik8s/minik8s/pkg/control/scheduler/cache"
	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/defaultpreemption"
	"github.com/minik8s/minik8s/pkg/control/scheduler/queue"
	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
)

// Name is the schedulerName of the default profile.
const Name = corev1.DefaultSchedulerName

// Config wires a scheduler.
type Config struct {
	Client    kubernetes.Interface
	Informers informers.SharedInformerFactory
	// Recorder gives the events.k8s.io recorder of a profile (its schedulerName is the
	// reporting controller), as kube-scheduler's.
	Recorder func(schedulerName string) events.EventRecorder
	Log      *slog.Logger
	Metrics  *Metrics // nil: unregistered metrics
	// Configuration is the KubeSchedulerConfiguration (nil: the defaults).
	Configuration *Configuration
	// BindWorkers bounds the bindings in flight (0: 64).
	BindWorkers int
}

// Scheduler places pods with no node on a node.
type Scheduler struct {
	client   kubernetes.Interface
	cache    *cache.Cache
	snapshot *cache.Snapshot
	queue    *queue.Queue
	profiles map[string]*profile
	log      *slog.Logger
	metrics  *Metrics
	synced   []toolscache.InformerSynced
	// handlers remove the informer handlers: a scheduler that stopped leading leaves the
	// shared informers to the next one.
	handlers  []func()
	binds     chan struct{} // semaphore of bindings in flight
	binding   sync.WaitGroup
	nominated *nominator
	informers informers.SharedInformerFactory
	// nextStart is where the next cycle starts filtering, so nodes share the load.
	nextStart int
}

// profile is a framework with its recorder.
type profile struct {
	*framework.Framework
	recorder events.EventRecorder
	handle   *handle
}

// handle is what plugins of one profile see.
type handle struct {
	client    kubernetes.Interface
	informers informers.SharedInformerFactory
	sched     *Scheduler
	fwk       *framework.Framework
}

func (h *handle) Client() kubernetes.Interface               { return h.client }
func (h *handle) Informers() informers.SharedInformerFactory { return h.informers }
func (h *handle) Nodes() framework.NodeLister                { return h.sched.snapshot }

func (h *handle) RunFilters(ctx context.Context, pod *framework.PodInfo, nodes framework.NodeLister, node *framework.NodeInfo) *framework.Status {
	return h.fwk.RunFilters(ctx, pod, nodes, node)
}

// New builds the profiles and wires the scheduler to the shared informers; call Run after
// the factory started.
func New(cfg Config) (*Scheduler, error) {
	conf := cfg.Configuration
	if conf == nil {
		conf = DefaultConfiguration()
	}
	metrics := cfg.Metrics
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	workers := cfg.BindWorkers
	if workers <= 0 {
		workers = 64
	}
	s := &Scheduler{client: cfg.Client, cache: cache.New(), snapshot: cache.NewSnapshot(), profiles: map[string]*profile{},
		log: cfg.Log, metrics: metrics, binds: make(chan struct{}, workers), nominated: newNominator(), informers: cfg.Informers}
	events := map[string][]framework.ClusterEvent{}
	for i := range conf.Profiles {
		p, err := s.buildProfile(cfg, conf, &conf.Profiles[i], events)
		if err != nil {
			return nil, err
		}
		s.profiles[p.ProfileName] = p
	}
	backoff, maxBackoff := queue.DefaultInitialBackoff, queue.DefaultMaxBackoff
	if conf.PodInitialBackoffSeconds != nil {
		backoff = time.Duration(*conf.PodInitialBackoffSeconds) * time.Second
	}
	if conf.PodMaxBackoffSeconds != nil {
		maxBackoff = time.Duration(*conf.PodMaxBackoffSeconds) * time.Second
	}
	if backoff <= 0 || maxBackoff < backoff {
		return nil, fmt.Errorf("scheduler config: podInitialBackoffSeconds must be > 0 and <= podMaxBackoffSeconds")
	}
	s.queue = queue.New(events, backoff, maxBackoff)
	if err := s.addHandlers(cfg.Informers); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Scheduler) buildProfile(cfg Config, conf *Configuration, p *Profile, events map[string][]framework.ClusterEvent) (*profile, error) {
	r, err := p.resolve()
	if err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	args := map[string][]byte{}
	for _, pc := range p.PluginConfig {
		if _, ok := plugins.Registry[pc.Name]; !ok {
			return nil, fmt.Errorf("scheduler config: profile %s: pluginConfig names unknown plugin %q", p.SchedulerName, pc.Name)
		}
		args[pc.Name] = pc.Args
	}
	pct := conf.PercentageOfNodesToScore
	if p.PercentageOfNodesToScore != nil {
		pct = p.PercentageOfNodesToScore
	}
	fwk := &framework.Framework{ProfileName: p.SchedulerName, Parallelism: conf.Parallelism}
	if fwk.Parallelism <= 0 {
		fwk.Parallelism = runtime.GOMAXPROCS(0)
	}
	if pct != nil {
		fwk.PercentageOfNodesToScore = *pct
	}
	h := &handle{client: cfg.Client, informers: cfg.Informers, sched: s, fwk: fwk}
	prof := &profile{Framework: fwk, recorder: cfg.Recorder(p.SchedulerName), handle: h}
	built := map[string]framework.Plugin{}
	get := func(name string) (framework.Plugin, error) {
		if pl, ok := built[name]; ok {
			return pl, nil
		}
		pl, err := plugins.Registry[name](h, args[name])
		if err != nil {
			return nil, fmt.Errorf("scheduler config: profile %s: plugin %s: %w", p.SchedulerName, name, err)
		}
		if pre, ok := pl.(*defaultpreemption.Plugin); ok {
			pre.OnPreempt = func(victim, preemptor *corev1.Pod, node string) {
				prof.recorder.Eventf(victim, preemptor, corev1.EventTypeNormal, "Preempted", "Preempting", "Preempted by pod %s on node %s", preemptor.UID, node)
				s.metrics.victims.Observe(1)
			}
		}
		if ext, ok := pl.(framework.EnqueueExtensions); ok {
			events[name] = ext.EventsToRegister()
		}
		built[name] = pl
		return pl, nil
	}
	for pt, names := range r.points {
		for _, name := range names {
			pl, err := get(name)
			if err != nil {
				return nil, err
			}
			switch point(pt) {
			case preFilter:
				appendIfImplements(&fwk.PreFilters, pl)
			case filter:
				appendIfImplements(&fwk.Filters, pl)
			case postFilter:
				appendIfImplements(&fwk.PostFilters, pl)
			case preScore:
				appendIfImplements(&fwk.PreScores, pl)
			case score:
				if x, ok := pl.(framework.ScorePlugin); ok {
					w := r.weights[name]
					if w == 0 {
						w = 1
					}
					fwk.Scores = append(fwk.Scores, framework.WeightedScore{ScorePlugin: x, Weight: w})
				}
			case reserve:
				appendIfImplements(&fwk.Reserves, pl)
			case preBind:
				appendIfImplements(&fwk.PreBinds, pl)
			case bind:
				appendIfImplements(&fwk.Binds, pl)
			}
		}
	}
	if len(fwk.Binds) == 0 {
		return nil, fmt.Errorf("scheduler config: profile %s has no bind plugin", p.SchedulerName)
	}
	return prof, nil
}

// Run schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer func() {
		for _, remove := range s.handlers {
			remove()
		}
	}()
	if !toolscache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return
	}
	// The informers plugins asked for (services, ReplicaSets... for default spreading).
	for _, ok := range s.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return
		}
	}
	s.log.Info("scheduler started", "profiles", len(s.profiles))
	// Run returns after the queue, the metrics loop and every binding in flight have.
	var running sync.WaitGroup
	defer running.Wait()
	running.Go(func() { s.queue.Run(ctx) })
	running.Go(func() { s.reportPending(ctx) })
	defer s.binding.Wait()
	for ctx.Err() == nil {
		qp := s.queue.Pop()
		if qp == nil {
			return
		}
		s.scheduleOne(ctx, qp)
	}
}

func (s *Scheduler) reportPending(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) {
		for q, n := range s.queue.Lengths() {
			s.metrics.pending.WithLabelValues(q).Set(float64(n))
		}
	}, time.Second)
}

// scheduleOne runs one pod's scheduling cycle and hands a placed pod to a binding goroutine.
func (s *Scheduler) scheduleOne(ctx context.Context, qp *queue.QueuedPodInfo) {
	pod := qp.Pod
	prof := s.profiles[pod.Spec.SchedulerName]
	if prof == nil || pod.DeletionTimestamp != nil || s.cache.IsAssumed(pod.UID) {
		s.queue.Done(pod)
		return
	}
	start := time.Now()
	cycle := s.queue.SchedulingCycle()
	state := framework.NewCycleState()
	s.cache.UpdateSnapshot(s.snapshot)
	node, err := s.schedulePod(ctx, prof, state, qp.PodInfo)
	if err != nil {
		nominated := ""
		if fit, ok := err.(*framework.FitError); ok && len(prof.PostFilters) > 0 {
			s.metrics.preemption.Inc()
			var status *framework.Status
			nominated, status = prof.RunPostFilter(ctx, state, qp.PodInfo, fit.Diagnosis.NodeStatuses)
			if status.Code() == framework.Error {
				s.log.Warn("preemption failed", "pod", queue.Key(pod), "err", status.AsError())
			} else if !status.IsSuccess() {
				fit.Diagnosis.PostFilterMsg = status.Message()
			}
		}
		s.fail(ctx, prof, qp, cycle, err, nominated, start)
		return
	}
	if err := s.cache.AssumePod(qp.PodInfo, node); err != nil {
		s.fail(ctx, prof, qp, cycle, err, "", start)
		return
	}
	if st := prof.RunReserve(ctx, state, qp.PodInfo, node); !st.IsSuccess() {
		s.cache.ForgetPod(pod)
		s.fail(ctx, prof, qp, cycle, fmt.Errorf("reserve: %s", st.Message()), "", start)
		return
	}
	s.binds <- struct{}{}
	s.binding.Go(func() {
		defer func() { <-s.binds }()
		s.bind(ctx, prof, state, qp, cycle, node, start)
	})
}

// schedulePod filters nodes (a share of them in large clusters) and scores the fitting ones.
func (s *Scheduler) schedulePod(ctx context.Context, prof *profile, state *framework.CycleState, pod *framework.PodInfo) (string, error) {
	nodes := s.snapshot.List()
	if len(nodes) == 0 {
		return "", ErrNoNodesAvailable
	}
	feasible, diag, err := s.findNodesThatFit(ctx, prof, state, pod, nodes)
	if err != nil {
		return "", err
	}
	if len(feasible) == 0 {
		return "", &framework.FitError{NumAllNodes: len(nodes), Diagnosis: diag}
	}
	if len(feasible) == 1 {
		return feasible[0].Node().Name, nil
	}
	scores, st := prof.RunScore(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return "", fmt.Errorf("running score plugin %s: %w", st.Plugin(), st.AsError())
	}
	return selectHost(scores), nil
}

func (s *Scheduler) findNodesThatFit(ctx context.Context, prof *profile, state *framework.CycleState, pod *framework.PodInfo, nodes []*framework.NodeInfo) ([]*framework.NodeInfo, framework.Diagnosis, error) {
	diag := framework.Diagnosis{NodeStatuses: framework.NodeStatuses{}, UnschedulablePlugins: map[string]bool{}}
	if st := prof.RunPreFilter(ctx, state, pod, s.snapshot); !st.IsSuccess() {
		if !st.IsRejected() {
			return nil, diag, fmt.Errorf("running PreFilter plugin %s: %w", st.Plugin(), st.AsError())
		}
		diag.PreFilterMsg = st.Message()
		diag.UnschedulablePlugins[st.Plugin()] = true
		for _, n := range nodes {
			diag.NodeStatuses[n.Node().Name] = st
		}
		return nil, diag, nil
	}
	want := prof.NumFeasibleNodesToFind(len(nodes))
	feasible := make([]*framework.NodeInfo, want)
	// Each node's rejection, by index, made on the first rejection: most cycles reject no
	// node, and a slice for every node of a large cluster per cycle was most of a cycle's
	// garbage.
	var statuses atomic.Pointer[[]*framework.Status]
	rejected := func() []*framework.Status {
		if p := statuses.Load(); p != nil {
			return *p
		}
		all := make([]*framework.Status, len(nodes))
		if statuses.CompareAndSwap(nil, &all) {
			return all
		}
		return *statuses.Load()
	}
	var found, processed atomic.Int64
	var firstErr atomic.Pointer[framework.Status]
	start := s.nextStart % len(nodes)
	// Pods nominated by a preemption count on their node for pods of lower priority
	// (their resources and ports; affinity and spread counts are not redone).
	nominated := s.nominated.forPod(pod.Pod)
	prof.Parallelize(ctx, len(nodes), func(i int) bool {
		n := nodes[(start+i)%len(nodes)]
		filtered := n
		if nominated != nil {
			filtered = withNominated(n, nominated)
		}
		st := prof.RunFilter(ctx, state, pod, filtered)
		processed.Add(1)
		if st.IsSuccess() {
			k := found.Add(1)
			if k > int64(want) {
				return false
			}
			feasible[k-1] = n
			return k < int64(want)
		}
		if st.Code() == framework.Error {
			firstErr.Store(st)
			return false
		}
		rejected()[(start+i)%len(nodes)] = st
		return true
	})
	if st := firstErr.Load(); st != nil {
		return nil, diag, fmt.Errorf("running Filter plugin %s: %w", st.Plugin(), st.AsError())
	}
	s.nextStart = (start + int(processed.Load())) % len(nodes)
	n := min(int(found.Load()), want)
	if p := statuses.Load(); n == 0 && p != nil {
		for i, st := range *p {
			if st != nil {
				diag.NodeStatuses[nodes[i].Node().Name] = st
				diag.UnschedulablePlugins[st.Plugin()] = true
			}
		}
	}
	return feasible[:n], diag, nil
}

// selectHost takes the highest total score, ties broken at random (reservoir sampling).
func selectHost(scores []framework.NodeScore) string {
	best, ties := 0, 1
	for i := 1; i < len(scores); i++ {
		switch {
		case scores[i].Score > scores[best].Score:
			best, ties = i, 1
		case scores[i].Score == scores[best].Score:
			ties++
			if rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return scores[best].Name
}

// bind runs the bind plugins; on failure the assumed pod is forgotten and retried.
func (s *Scheduler) bind(ctx context.Context, prof *profile, state *framework.CycleState, qp *queue.QueuedPodInfo, cycle int64, node string, start time.Time) {
	pod := qp.Pod
	st := prof.RunPreBind(ctx, state, qp.PodInfo, node)
	if st.IsSuccess() {
		st = prof.RunBind(ctx, state, qp.PodInfo, node)
	}
	if !st.IsSuccess() {
		s.cache.ForgetPod(pod)
		prof.RunUnreserve(ctx, state, qp.PodInfo, node)
		s.fail(ctx, prof, qp, cycle, fmt.Errorf("binding rejected: %w", st.AsError()), "", start)
		return
	}
	s.queue.Done(pod)
	s.nominated.delete(pod.UID)
	s.metrics.attempts.WithLabelValues("scheduled", prof.ProfileName).Inc()
	s.metrics.attemptDur.WithLabelValues("scheduled", prof.ProfileName).Observe(time.Since(start).Seconds())
	s.metrics.e2eDur.WithLabelValues(attemptsLabel(qp.Attempts)).Observe(time.Since(qp.InitialAttempt).Seconds())
	prof.recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
}

func attemptsLabel(n int) string {
	if n >= 15 {
		return "15+"
	}
	return fmt.Sprint(n)
}

// appendIfImplements appends pl to list when it implements the list's extension point.
func appendIfImplements[P any](list *[]P, pl framework.Plugin) {
	if x, ok := pl.(P); ok {
		*list = append(*list, x)
	}
}
