// Package eviction is the kubelet's eviction manager in minilet: while a threshold of
// --eviction-hard is crossed, or one of --eviction-soft has been for its grace period, it
// ends one pod per interval, ranked as the kubelet ranks them (usage over requests, then
// priority, then how far over), after reclaiming what the node itself can for disk
// signals; and it ends pods that outgrow an ephemeral-storage limit or an emptyDir's
// sizeLimit. Evicted pods fail with reason Evicted and the kubelet's message, and a
// Warning Evicted Event.
package eviction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/agent/podsync"
	"github.com/minik8s/minik8s/pkg/stats"
)

// The kubelet's eviction message fragments (pkg/kubelet/eviction/helpers.go), trailing
// spaces included, and the annotations its Event carries.
const (
	nodeLowMessageFmt      = "The node was low on resource: %v. "
	thresholdMetMessageFmt = "Threshold quantity: %v, available: %v. "
	containerMessageFmt    = "Container %s was using %s, request is %s, has larger consumption of %v. "

	offendingContainersKey      = "offending_containers"
	offendingContainersUsageKey = "offending_containers_usage"
	starvedResourceKey          = "starved_resource"
)

// monitoringInterval is how often the kubelet's eviction manager looks (its
// housekeeping interval), and so how fast it evicts: one pod per interval.
const monitoringInterval = 10 * time.Second

// immediateGracePeriod is the grace an evicted pod gets under a hard threshold or past a
// storage limit, as the kubelet's immediateEvictionGracePeriodSeconds.
const immediateGracePeriod = time.Second

// Config is what the manager watches and how it acts.
type Config struct {
	// Pressure holds the samples against --eviction-hard and --eviction-soft and says
	// which thresholds to act on.
	Pressure *stats.Pressure
	// MaxPodGracePeriod caps the grace of a pod evicted for a soft threshold
	// (--eviction-max-pod-grace-period).
	MaxPodGracePeriod time.Duration
	// Stats is the latest sample of the node's and its pods' usage, and a fresh one when
	// the kernel tells a memory threshold was crossed.
	Stats interface {
		Latest() *stats.Snapshot
		Sample(ctx context.Context)
	}
	// MemoryCgroup is the node's cgroup ("/": the machine's) whose memory usage the
	// kernel watches against the memory.available thresholds.
	MemoryCgroup string
	// Pods are the pods running on the node (not finished, not being deleted).
	Pods func() []*corev1.Pod
	// Evict ends a pod as e says (reason Evicted) and returns once its containers have
	// stopped.
	Evict func(ctx context.Context, pod *corev1.Pod, e podsync.Ending) error
	// ReclaimDisk frees what the node can without ending pods (finished pods' containers,
	// unused images), tried before evicting for a disk signal; nil: nothing.
	ReclaimDisk func(ctx context.Context) error
	Recorder    record.EventRecorder
	Clock       clock.WithTicker
	Log         *slog.Logger
}

// Manager is the eviction manager.
type Manager struct {
	cfg Config
	// lastEviction is when the last pod was evicted: samples taken before then still
	// count its usage, and would evict a second pod for the same shortage.
	lastEviction time.Time
}

// New makes the eviction manager cfg describes.
func New(cfg Config) *Manager { return &Manager{cfg: cfg} }

// Run looks at the node every monitoringInterval, and at once when the kernel tells
// that the node's memory usage crossed a memory.available threshold, until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	tick := m.cfg.Clock.NewTicker(monitoringInterval)
	defer tick.Stop()
	crossed := make(chan struct{}, 1)
	var waiters sync.WaitGroup // the notifiers' waits, joined after they are closed
	defer waiters.Wait()
	var notifiers []*usageNotifier
	defer func() { closeAll(notifiers) }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		case <-crossed:
			m.cfg.Log.Info("memory usage crossed a threshold, looking now")
			m.cfg.Stats.Sample(ctx)
		}
		if pod := m.synchronize(ctx); pod != nil {
			m.cfg.Log.Info("evicted a pod", "pod", pod.Namespace+"/"+pod.Name)
		}
		closeAll(notifiers)
		notifiers = m.notifyMemory(crossed, &waiters)
	}
}

// notifyMemory registers, for each memory.available threshold, the usage at which the
// node's working set reaches it (capacity less the threshold, plus the inactive file
// pages usage counts and the working set does not), as the kubelet's memory threshold
// notifier re-arms after each look; a crossing pokes crossed.
func (m *Manager) notifyMemory(crossed chan<- struct{}, waiters *sync.WaitGroup) []*usageNotifier {
	snap := m.cfg.Stats.Latest()
	if snap == nil || m.cfg.MemoryCgroup == "" {
		return nil
	}
	mem := snap.Summary.Node.Memory
	if mem == nil || mem.AvailableBytes == nil || mem.WorkingSetBytes == nil || mem.UsageBytes == nil {
		return nil
	}
	capacity := int64(*mem.AvailableBytes + *mem.WorkingSetBytes)
	inactiveFile := int64(*mem.UsageBytes) - int64(*mem.WorkingSetBytes)
	var out []*usageNotifier
	for _, t := range m.cfg.Pressure.Thresholds() {
		if t.Signal != "memory.available" {
			continue
		}
		n, err := notifyUsage(m.cfg.MemoryCgroup, capacity-t.Of(capacity)+max(inactiveFile, 0))
		if errors.Is(err, errNoNotifications) {
			return out
		}
		if err != nil {
			m.cfg.Log.Warn("memory threshold notification", "err", err)
			continue
		}
		waiters.Go(func() {
			if n.Wait() == nil {
				select {
				case crossed <- struct{}{}:
				default:
				}
			}
		})
		out = append(out, n)
	}
	return out
}

func closeAll(notifiers []*usageNotifier) {
	for _, n := range notifiers {
		n.Close()
	}
}

// synchronize evicts at most one pod, for a storage limit or a crossed threshold, and
// returns it.
func (m *Manager) synchronize(ctx context.Context) *corev1.Pod {
	snap := m.cfg.Stats.Latest()
	if snap == nil || !m.lastEviction.IsZero() && !sampleTime(&snap.Summary).After(m.lastEviction) {
		return nil
	}
	pods := m.cfg.Pods()
	podStats := statsByUID(&snap.Summary)
	for _, pod := range pods {
		if msg := localStorageExceeded(pod, podStats[pod.UID]); msg != "" && !critical(pod) {
			if m.evict(ctx, pod, podsync.Ending{Reason: podsync.EvictedReason, Message: msg, Grace: immediateGracePeriod}, nil) {
				return pod
			}
		}
	}
	crossed := m.cfg.Pressure.Observe(&snap.Summary, m.cfg.Clock.Now())
	if len(crossed) == 0 {
		return nil
	}
	c := mostPressing(crossed)
	if c.Condition == stats.DiskPressure && m.cfg.ReclaimDisk != nil {
		// As the kubelet's reclaimNodeLevelResources: node-level reclaim first, then a
		// fresh sample; pods go now only if it still meets a threshold, minimum reclaim
		// included.
		if err := m.cfg.ReclaimDisk(ctx); err != nil {
			m.cfg.Log.Warn("reclaim disk space before evicting", "err", err)
		}
		m.cfg.Stats.Sample(ctx)
		if after := m.cfg.Stats.Latest(); after != nil && !m.cfg.Pressure.MetAfterReclaim(&after.Summary) {
			return nil
		}
	}
	resourceName := starvedResource(c.Signal)
	for _, pod := range rank(pods, podStats, c) {
		if critical(pod) {
			continue
		}
		msg, annotations := pressureMessage(pod, podStats[pod.UID], c, resourceName)
		cond := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: corev1.PodReasonTerminationByKubelet, Message: msg}
		if m.evict(ctx, pod, podsync.Ending{Reason: podsync.EvictedReason, Message: msg, Condition: cond, Grace: m.gracePeriod(pod, c.Threshold)}, annotations) {
			return pod
		}
	}
	return nil
}

// evict records the Event and ends the pod; false when it could not.
func (m *Manager) evict(ctx context.Context, pod *corev1.Pod, e podsync.Ending, annotations map[string]string) bool {
	m.cfg.Recorder.AnnotatedEventf(pod, annotations, corev1.EventTypeWarning, podsync.EvictedReason, "%s", e.Message)
	if err := m.cfg.Evict(ctx, pod, e); err != nil {
		m.cfg.Log.Error("evict pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return false
	}
	m.lastEviction = m.cfg.Clock.Now()
	return true
}

// gracePeriod is what a pod evicted for t gets, as the kubelet gives it: at once for a
// hard threshold; for a soft one its terminationGracePeriodSeconds capped at
// --eviction-max-pod-grace-period, and no less than our second.
func (m *Manager) gracePeriod(pod *corev1.Pod, t stats.Threshold) time.Duration {
	if t.Hard() {
		return immediateGracePeriod
	}
	grace := m.cfg.MaxPodGracePeriod
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		grace = min(grace, time.Duration(*s)*time.Second)
	}
	return max(grace, immediateGracePeriod)
}

// sampleTime is when s was taken.
func sampleTime(s *statsapi.Summary) time.Time {
	if m := s.Node.Memory; m != nil {
		return m.Time.Time
	}
	if c := s.Node.CPU; c != nil {
		return c.Time.Time
	}
	return time.Time{}
}

// mostPressing is the crossing the manager reclaims first: memory before disk before
// pids, as the kubelet orders its thresholds.
func mostPressing(crossed []stats.Crossing) stats.Crossing {
	order := map[stats.Condition]int{stats.MemoryPressure: 0, stats.DiskPressure: 1, stats.PIDPressure: 2}
	best := crossed[0]
	for _, c := range crossed[1:] {
		if order[c.Condition] < order[best.Condition] {
			best = c
		}
	}
	return best
}

// starvedResource is the resource a signal measures, as the kubelet names it in messages.
func starvedResource(signal string) corev1.ResourceName {
	switch signal {
	case "memory.available":
		return corev1.ResourceMemory
	case "nodefs.inodesFree", "imagefs.inodesFree":
		return "inodes"
	case "pid.available":
		return "pids"
	}
	return corev1.ResourceEphemeralStorage
}

// pressureMessage is the kubelet's eviction message for a pod ended under pressure, and
// its Event's annotations: the threshold and what was left, then each container using
// more than it requested.
func pressureMessage(pod *corev1.Pod, ps *statsapi.PodStats, c stats.Crossing, resourceName corev1.ResourceName) (string, map[string]string) {
	msg := fmt.Sprintf(nodeLowMessageFmt, resourceName) +
		fmt.Sprintf(thresholdMetMessageFmt, quantity(c.Min), quantity(c.Available))
	var names, usages []string
	if ps != nil {
		for _, cs := range ps.Containers {
			for _, spec := range pod.Spec.Containers {
				if spec.Name != cs.Name {
					continue
				}
				var used *uint64
				switch resourceName {
				case corev1.ResourceMemory:
					if cs.Memory != nil {
						used = cs.Memory.WorkingSetBytes
					}
				case corev1.ResourceEphemeralStorage:
					used = containerDiskUsed(cs)
				}
				request := spec.Resources.Requests[resourceName]
				if used == nil || int64(*used) <= request.Value() {
					continue
				}
				usage := quantity(int64(*used))
				msg += fmt.Sprintf(containerMessageFmt, spec.Name, usage, request.String(), resourceName)
				names, usages = append(names, spec.Name), append(usages, usage)
			}
		}
	}
	return msg, map[string]string{
		offendingContainersKey:      strings.Join(names, ","),
		offendingContainersUsageKey: strings.Join(usages, ","),
		starvedResourceKey:          string(resourceName),
	}
}

func quantity(v int64) string { return resource.NewQuantity(v, resource.BinarySI).String() }
