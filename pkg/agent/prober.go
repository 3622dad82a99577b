package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/probe"
	"github.com/minik8s/minik8s/pkg/runtime"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// probeKey names one probe of one container of one pod.
type probeKey struct {
	pod       types.UID
	container string
	kind      probe.Kind
}

type probeWorker struct {
	containerID string
	cancel      context.CancelFunc
}

// prober is the kubelet's prober manager: one worker per probe of each running container
// instance; readiness decides the container's Ready, startup its Started (and gates the
// others), liveness kills it when it fails.
type prober struct {
	a       *Agent
	ctx     context.Context
	mu      sync.Mutex
	workers map[probeKey]probeWorker
	results map[probeKey]probe.Result
}

func newProber(ctx context.Context, a *Agent) *prober {
	return &prober{a: a, ctx: ctx, workers: map[probeKey]probeWorker{}, results: map[probeKey]probe.Result{}}
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

// sync starts workers for the running containers' probes (afresh for a new instance) and
// stops those of containers that no longer run.
func (p *prober) sync(pod *corev1.Pod, status corev1.PodStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[probeKey]string{}
	var probed []*corev1.Container // app containers and sidecars
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			probed = append(probed, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		probed = append(probed, &pod.Spec.Containers[i])
	}
	statuses := slices.Concat(status.InitContainerStatuses, status.ContainerStatuses)
	for _, c := range probed {
		for _, cs := range statuses {
			if cs.Name != c.Name || cs.State.Running == nil || pod.DeletionTimestamp != nil {
				continue
			}
			for kind, pr := range probesOf(c) {
				key := probeKey{pod.UID, c.Name, kind}
				want[key] = cs.ContainerID
				if w, ok := p.workers[key]; ok && w.containerID == cs.ContainerID {
					continue
				}
				if w, ok := p.workers[key]; ok {
					w.cancel()
				}
				p.results[key] = probe.Initial(kind)
				p.start(key, pod, c, pr, cs.ContainerID, pod.Status.PodIP)
			}
		}
	}
	for key, w := range p.workers {
		if key.pod == pod.UID && want[key] != w.containerID {
			w.cancel()
			delete(p.workers, key)
			delete(p.results, key)
		}
	}
}

func (p *prober) start(key probeKey, pod *corev1.Pod, c *corev1.Container, pr *corev1.Probe, containerID, podIP string) {
	ctx, cancel := context.WithCancel(p.ctx)
	p.workers[key] = probeWorker{containerID: containerID, cancel: cancel}
	container := c.DeepCopy()
	podRef := pod.DeepCopy()
	exec := p.a.execIn(containerID)
	observe := p.a.metrics.probeObserver(string(key.kind), podRef, container.Name)
	w := &probe.Worker{
		Kind: key.kind, Probe: pr, Clock: p.a.clock,
		Run: func(ctx context.Context) (probe.Result, string) {
			start := p.a.clock.Now()
			r, out := probe.Run(ctx, pr, container, podIP, exec)
			observe(r.String(), p.a.clock.Since(start))
			return r, out
		},
		Report: func(r probe.Result, output string, current probe.Result, changed bool) {
			p.report(ctx, key, podRef, container, pr, containerID, r, output, current, changed)
		},
	}
	if key.kind != probe.Startup {
		w.Gate = func() bool { return p.started(key.pod, key.container) }
	}
	go w.Loop(ctx)
}

func (p *prober) report(ctx context.Context, key probeKey, pod *corev1.Pod, c *corev1.Container, pr *corev1.Probe, containerID string,
	r probe.Result, output string, current probe.Result, changed bool) {
	if ctx.Err() != nil {
		return // the worker was stopped meanwhile
	}
	if r == probe.Failure {
		p.a.containerEvent(pod, c.Name, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", key.kind, output)
	}
	if !changed {
		return
	}
	p.mu.Lock()
	p.results[key] = current
	p.mu.Unlock()
	if current == probe.Failure && key.kind != probe.Readiness {
		// A failed liveness or startup probe kills the container; its restart policy decides.
		p.a.containerEvent(pod, c.Name, corev1.EventTypeNormal, "Killing", "Container %s failed %s probe, will be restarted", c.Name, lower(key.kind))
		grace := gracePeriod(pod)
		if pr.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(*pr.TerminationGracePeriodSeconds) * time.Second
		}
		rc := runtime.Container{ID: runtime.IDFromStatus(containerID), Name: c.Name}
		go func() {
			if err := p.a.stopContainers(p.ctx, nil, []runtime.Container{rc}, p.a.runPreStop(p.ctx, pod, rc, grace)); err != nil {
				p.a.containerEvent(pod, c.Name, corev1.EventTypeWarning, "FailedKillPod", "error killing container %s: %v", c.Name, err)
			}
			p.a.workers.Wake(pod.UID)
		}()
	}
	p.a.workers.Wake(pod.UID) // the pod's status changes
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

// ready: the container's readiness probe has succeeded (or it has none).
func (p *prober) ready(uid types.UID, c *corev1.Container) bool {
	if c.ReadinessProbe == nil {
		return p.started(uid, c.Name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.results[probeKey{uid, c.Name, probe.Readiness}] == probe.Success
}

// started: the container's startup probe has succeeded (or it has none).
func (p *prober) started(uid types.UID, container string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.results[probeKey{uid, container, probe.Startup}]
	return !ok || r == probe.Success
}

// forget stops every worker of a pod that is going.
func (p *prober) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, w := range p.workers {
		if key.pod == uid {
			w.cancel()
			delete(p.workers, key)
			delete(p.results, key)
		}
	}
}
