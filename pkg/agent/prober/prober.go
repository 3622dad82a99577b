// Package prober is the kubelet's prober manager: one worker per probe of each running
// container instance; readiness decides the container's Ready, startup its Started (and
// gates the others), liveness kills it when it fails.
package prober

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/probe"
)

// Containers is what the prober needs of the pod runtime.
type Containers interface {
	// Exec runs exec probes' commands in the container with the given status ID.
	Exec(containerID string) probe.Execer
	// Kill stops a container that failed its liveness or startup probe (preStop hook
	// first); grace is the probe's terminationGracePeriodSeconds, nil for the pod's.
	Kill(ctx context.Context, pod *corev1.Pod, container, containerID string, grace *int64) error
}

// Events records events about a pod's containers.
type Events interface {
	ContainerEvent(pod *corev1.Pod, container, eventType, reason, format string, args ...any)
}

// Observer returns the function that records how one probe of a container went.
type Observer func(kind string, pod *corev1.Pod, container string) func(result probe.Result, took time.Duration)

// Config is what a Manager runs on.
type Config struct {
	Containers Containers
	Events     Events
	Observe    Observer
	// Wake asks for the pod to be synced again: its status changed.
	Wake  func(types.UID)
	Clock clock.WithTicker
	Log   *slog.Logger
}

// key names one probe of one container of one pod.
type key struct {
	pod       types.UID
	container string
	kind      probe.Kind
}

type worker struct {
	containerID string
	cancel      context.CancelFunc
}

// Manager keeps the probe workers of the node's pods.
type Manager struct {
	cfg     Config
	wg      sync.WaitGroup // workers and the kills they start
	mu      sync.Mutex
	stopped bool
	workers map[key]worker
	results map[key]probe.Result
	// runningApps names, per pod, its app containers that ran at its last Sync.
	runningApps map[types.UID][]string
}

// New makes a Manager; workers start at Sync and stop when Run's context ends.
func New(cfg Config) *Manager {
	return &Manager{cfg: cfg, workers: map[key]worker{}, results: map[key]probe.Result{}, runningApps: map[types.UID][]string{}}
}

// Run waits until ctx ends, then stops every worker and waits for them.
func (m *Manager) Run(ctx context.Context) {
	<-ctx.Done()
	m.mu.Lock()
	m.stopped = true
	for k, w := range m.workers {
		w.cancel()
		delete(m.workers, k)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

func probesOf(c *corev1.Container) map[probe.Kind]*corev1.Probe {
	out := map[probe.Kind]*corev1.Probe{}
	for kind, p := range map[probe.Kind]*corev1.Probe{probe.Liveness: c.LivenessProbe, probe.Readiness: c.ReadinessProbe, probe.Startup: c.StartupProbe} {
		if p != nil {
			out[kind] = p
		}
	}
	return out
}

// Sync starts workers for the probes of the running containers among probed (the pod's
// app containers and sidecars), afresh for a new instance, and stops those of containers
// that no longer run. statuses are the pod's init and app container statuses.
func (m *Manager) Sync(pod *corev1.Pod, probed []*corev1.Container, statuses []corev1.ContainerStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.runningApps[pod.UID] = nil
	for _, c := range pod.Spec.Containers {
		if slices.ContainsFunc(statuses, func(cs corev1.ContainerStatus) bool { return cs.Name == c.Name && cs.State.Running != nil }) {
			m.runningApps[pod.UID] = append(m.runningApps[pod.UID], c.Name)
		}
	}
	want := map[key]string{}
	for _, c := range probed {
		for _, cs := range statuses {
			if cs.Name != c.Name || cs.State.Running == nil {
				continue
			}
			for kind, pr := range probesOf(c) {
				if pod.DeletionTimestamp != nil && kind != probe.Readiness {
					continue // a terminating pod's containers are only probed for readiness
				}
				k := key{pod.UID, c.Name, kind}
				want[k] = cs.ContainerID
				if w, ok := m.workers[k]; ok && w.containerID == cs.ContainerID {
					continue
				}
				if w, ok := m.workers[k]; ok {
					w.cancel()
				}
				m.results[k] = probe.Initial(kind)
				m.start(k, pod, c, pr, cs.ContainerID, pod.Status.PodIP)
			}
		}
	}
	for k, w := range m.workers {
		if k.pod == pod.UID && want[k] != w.containerID {
			w.cancel()
			delete(m.workers, k)
			delete(m.results, k)
		}
	}
}

func (m *Manager) start(k key, pod *corev1.Pod, c *corev1.Container, pr *corev1.Probe, containerID, podIP string) {
	// A worker lives until its container instance goes or Run stops it, not as long as
	// the sync that started it.
	ctx, cancel := context.WithCancel(context.Background())
	m.workers[k] = worker{containerID: containerID, cancel: cancel}
	container := c.DeepCopy()
	podRef := pod.DeepCopy()
	exec := m.cfg.Containers.Exec(containerID)
	observe := m.cfg.Observe(string(k.kind), podRef, container.Name)
	clk := m.cfg.Clock
	w := &probe.Worker{
		Kind: k.kind, Probe: pr, Clock: clk,
		Run: func(ctx context.Context) (probe.Result, string) {
			start := clk.Now()
			r, out := probe.Run(ctx, pr, container, podIP, exec)
			observe(r, clk.Since(start))
			return r, out
		},
		Report: func(r probe.Result, output string, current probe.Result, changed bool) {
			m.report(ctx, k, podRef, container, pr, containerID, r, output, current, changed)
		},
	}
	if k.kind != probe.Startup {
		w.Gate = func() bool { return m.Started(k.pod, k.container) }
	}
	m.wg.Go(func() { w.Loop(ctx) })
}

func (m *Manager) report(ctx context.Context, k key, pod *corev1.Pod, c *corev1.Container, pr *corev1.Probe, containerID string,
	r probe.Result, output string, current probe.Result, changed bool) {
	if ctx.Err() != nil {
		return // the worker was stopped meanwhile
	}
	switch r {
	case probe.Failure:
		m.cfg.Events.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", k.kind, output)
	case probe.Unknown: // the probe could not run (the kubelet's prober error)
		m.cfg.Events.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, "Unhealthy", "%s probe errored and resulted in unknown state: %s", k.kind, output)
	case probe.Warning:
		m.cfg.Events.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", k.kind, output)
	}
	if !changed {
		return
	}
	m.mu.Lock()
	m.results[k] = current
	othersRun := slices.ContainsFunc(m.runningApps[pod.UID], func(name string) bool { return name != c.Name })
	m.mu.Unlock()
	if current == probe.Failure && k.kind != probe.Readiness {
		// A failed liveness or startup probe kills the container; its restart policy decides.
		msg, podEnds := killMessage(pod, c.Name, k.kind, othersRun)
		grace := pr.TerminationGracePeriodSeconds
		if podEnds { // the kubelet kills the pod, as it ends any pod: in the pod's grace period
			grace = nil
		}
		m.cfg.Events.ContainerEvent(pod, c.Name, corev1.EventTypeNormal, "Killing", "%s", msg)
		m.wg.Go(func() {
			if err := m.cfg.Containers.Kill(ctx, pod, c.Name, containerID, grace); err != nil {
				m.cfg.Events.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, "FailedKillPod", "error killing container %s: %v", c.Name, err)
			}
			m.cfg.Wake(pod.UID)
		})
	}
	m.cfg.Wake(pod.UID) // the pod's status changes
}

// killMessage is the Killing event's message for a container that failed its liveness or
// startup probe, in the kubelet's words (computePodActions, computeInitContainerActions):
// a sidecar is an "Init container", and an app container "will be restarted" unless its
// restartPolicy, or else the pod's, is Never (its restartPolicyRules are not read: it has
// not exited yet). An app container that will not restart while no other one runs
// (othersRun) ends the pod: the kubelet kills the whole pod instead (KillPod), its event
// the plain "Stopping container X" of killContainer, and podEnds says so.
func killMessage(pod *corev1.Pod, container string, k probe.Kind, othersRun bool) (msg string, podEnds bool) {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			return fmt.Sprintf("Init container %s failed %s probe", container, lower(k)), false
		}
	}
	restart := pod.Spec.RestartPolicy != corev1.RestartPolicyNever
	for _, c := range pod.Spec.Containers {
		if c.Name == container && c.RestartPolicy != nil {
			restart = *c.RestartPolicy != corev1.ContainerRestartPolicyNever
		}
	}
	switch {
	case restart:
		return fmt.Sprintf("Container %s failed %s probe, will be restarted", container, lower(k)), false
	case !othersRun:
		return fmt.Sprintf("Stopping container %s", container), true
	}
	return fmt.Sprintf("Container %s failed %s probe", container, lower(k)), false
}

func lower(k probe.Kind) string {
	switch k {
	case probe.Liveness:
		return "liveness"
	case probe.Startup:
		return "startup"
	}
	return "readiness"
}

// Ready: the container's readiness probe has succeeded (or it has none).
func (m *Manager) Ready(uid types.UID, c *corev1.Container) bool {
	if c.ReadinessProbe == nil {
		return m.Started(uid, c.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[key{uid, c.Name, probe.Readiness}] == probe.Success
}

// Started: the container's startup probe has succeeded (or it has none).
func (m *Manager) Started(uid types.UID, container string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[key{uid, container, probe.Startup}]
	return !ok || r == probe.Success
}

// StopLivenessAndStartup stops the liveness and startup workers of a pod that terminates,
// as the kubelet's prober manager: its readiness is probed until its containers stopped.
func (m *Manager) StopLivenessAndStartup(uid types.UID) {
	m.forget(uid, func(k probe.Kind) bool { return k != probe.Readiness })
}

// Forget stops every worker of a pod that is going.
func (m *Manager) Forget(uid types.UID) {
	m.forget(uid, func(probe.Kind) bool { return true })
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runningApps, uid)
}

func (m *Manager) forget(uid types.UID, stops func(probe.Kind) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.workers {
		if k.pod == uid && stops(k.kind) {
			w.cancel()
			delete(m.workers, k)
			delete(m.results, k)
		}
	}
}
