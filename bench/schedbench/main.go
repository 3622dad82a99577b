// Command schedbench measures the scheduler through the real API: miniapi in-process on
// bolt with N fake Ready nodes, pods created by 16 client-go clients, each pod timed from
// the start of its create call to the moment an informer sees it bound. Scenarios: basic
// pods on 500 and 5000 nodes, pods with required pod anti-affinity, pods with a topology
// spread constraint. The baseline in the same run is the API alone: the same number of pods
// for a scheduler nobody runs, timed until all exist.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/internal/controller/trim"
	"github.com/minik8s/minik8s/internal/cputime"
	"github.com/minik8s/minik8s/pkg/control/scheduler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

func main() {
	pods := flag.Int("pods", 1000, "pods per scenario")
	small := flag.Int("nodes", 500, "nodes of the first scenarios")
	large := flag.Int("large-nodes", 5000, "nodes of the last scenario (0: skip it)")
	only := flag.String("only", "", "run only this scenario (baseline, basic, antiaffinity, spread, basic-large)")
	cpuProfile := flag.String("cpuprofile", "", "write each measured scenario's CPU profile to FILE.<scenario>")
	memProfile := flag.String("memprofile", "", "write a heap profile (live objects after a collection) at the end to this file")
	timeout := flag.Duration("timeout", 3*time.Minute, "give up on a scenario after this long")
	flag.Parse()
	if err := run(*pods, *small, *large, *only, *cpuProfile, *memProfile, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "schedbench:", err)
		os.Exit(1)
	}
}

type scenario struct {
	name  string
	nodes int
	pod   func(i int) *corev1.Pod
}

func run(n, small, large int, only, cpuProfile, memProfile string, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, done, err := benchapi.Start(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("schedbench: %d pods per scenario, load average %s\n", n, benchapi.LoadAverage())
	w := newBindWatch(ctx, client)
	scenarios := []scenario{
		{"baseline", small, func(int) *corev1.Pod { p := basicPod(); p.Spec.SchedulerName = "nobody"; return p }},
		{"basic", small, func(int) *corev1.Pod { return basicPod() }},
		{"antiaffinity", small, antiAffinityPod},
		{"spread", small, spreadPod},
	}
	if large > 0 {
		scenarios = append(scenarios, scenario{"basic-large", large, func(int) *corev1.Pod { return basicPod() }},
			scenario{"backlog-large", large, func(int) *corev1.Pod { p := basicPod(); p.Spec.SchedulerName = backlogScheduler; return p }})
	}
	have := 0
	for _, sc := range scenarios {
		if only != "" && sc.name != only {
			continue
		}
		if sc.nodes > have {
			began := time.Now()
			if err := benchapi.CreateNodes(ctx, client, have, sc.nodes); err != nil {
				return err
			}
			fmt.Printf("%d nodes ready in %.1fs\n", sc.nodes, time.Since(began).Seconds())
			have = sc.nodes
			time.Sleep(time.Second) // the scheduler's cache takes the last nodes in
		}
		file := ""
		if cpuProfile != "" {
			file = cpuProfile + "." + sc.name
		}
		share, err := startCPUShare(file)
		if err != nil {
			return err
		}
		cpu := cputime.Self()
		if err := measure(ctx, client, w, sc, n, timeout); err != nil {
			share.stop()
			return err
		}
		used := cputime.Self() - cpu
		scheduling, binding, err := share.stop()
		if err != nil {
			return err
		}
		perPod := func(s float64) float64 { return s * 1000 / float64(n) }
		fmt.Printf("%-13s CPU per pod: process %.2f ms, scheduler %.3f ms + binding handler %.3f ms = %.3f ms\n", "",
			perPod(used.Seconds()), perPod(scheduling), perPod(binding), perPod(scheduling+binding))
	}
	fmt.Printf("peak RSS of the process (miniapi + benchmark clients): %s\n", benchapi.PeakRSS())
	if memProfile != "" {
		if err := benchapi.WriteHeapProfile(memProfile); err != nil {
			return err
		}
	}
	// Shutting down fails the Scheduled events still queued: not worth a line each.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	cancel()
	return <-done
}

func basicPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/netexec:v1"}}}}
}

// antiAffinityPod belongs to one of four groups of n/4 pods, each group required to keep
// one pod per node (a Deployment spread over hosts, four times over).
func antiAffinityPod(i int) *corev1.Pod {
	p := basicPod()
	group := fmt.Sprintf("group-%d", i%4)
	p.Labels = map[string]string{"group": group}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": group}}, TopologyKey: corev1.LabelHostname}}}}
	return p
}

// spreadPod is spread over the ten zones with maxSkew 1.
func spreadPod(int) *corev1.Pod {
	p := basicPod()
	p.Labels = map[string]string{"app": "spread"}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
	return p
}

func measure(ctx context.Context, c *kubernetes.Clientset, w *bindWatch, sc scenario, n int, timeout time.Duration) error {
	if err := benchapi.Namespace(ctx, c, sc.name); err != nil {
		return err
	}
	var mu sync.Mutex
	started := make(map[string]time.Time, n)
	began := time.Now()
	err := benchapi.Parallel(16, n, func(i int) error {
		p := sc.pod(i)
		p.Name = fmt.Sprintf("pod-%05d", i)
		mu.Lock()
		started[p.Name] = time.Now()
		mu.Unlock()
		_, err := c.CoreV1().Pods(sc.name).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", sc.name, err)
	}
	created := time.Since(began)
	if sc.name == "backlog-large" {
		return measureBacklog(ctx, c, w, sc, n, started, timeout)
	}
	if sc.name == "baseline" {
		fmt.Printf("%-13s %4d nodes: %d pods for no scheduler created in %.2fs (%.0f pods/s): the API's own rate\n",
			sc.name, sc.nodes, n, created.Seconds(), float64(n)/created.Seconds())
		return nil
	}
	return report(w, sc, n, began, created, started, timeout)
}

// report waits until the scenario's n pods are bound and prints the figures, timed from began.
func report(w *bindWatch, sc scenario, n int, began time.Time, created time.Duration, started map[string]time.Time, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		bound := w.boundIn(sc.name)
		if len(bound) >= n {
			lat := make([]time.Duration, 0, n)
			last := began
			for name, at := range bound {
				lat = append(lat, at.Sub(started[name]))
				if at.After(last) {
					last = at
				}
			}
			total := last.Sub(began)
			how := fmt.Sprintf("created in %.2fs), create->bound", created.Seconds())
			if created == 0 {
				how = "all waiting when the scheduler started), start->bound"
			}
			fmt.Printf("%-13s %4d nodes: %d pods bound in %.2fs (%.0f pods/s; %s p50 %v p99 %v\n",
				sc.name, sc.nodes, n, total.Seconds(), float64(n)/total.Seconds(), how,
				benchapi.Percentile(lat, 0.5).Round(time.Millisecond), benchapi.Percentile(lat, 0.99).Round(time.Millisecond))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: after %v only %d of %d pods are bound", sc.name, timeout, len(bound), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// backlogScheduler is the schedulerName of the backlog scenario's pods: no scheduler serves
// them until all exist; then a second scheduler (the same code, its own informers) starts.
const backlogScheduler = "backlog-scheduler"

// measureBacklog times a scheduler that finds n pods waiting: the scheduler's own rate,
// binding through the API included, without the creates competing for the CPU.
func measureBacklog(ctx context.Context, c *kubernetes.Clientset, w *bindWatch, sc scenario, n int, started map[string]time.Time, timeout time.Duration) error {
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithTransform(trim.ManagedFields))
	b := events.NewEventBroadcasterAdapterWithContext(ctx, c)
	b.StartRecordingToSink(ctx.Done())
	conf := &scheduler.Configuration{Profiles: []scheduler.Profile{{SchedulerName: backlogScheduler}}}
	s, err := scheduler.New(scheduler.Config{Client: c, Informers: f, Configuration: conf,
		Recorder: func(name string) events.EventRecorder { return b.NewRecorder(name) },
		Log:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	began := time.Now()
	for name := range started {
		started[name] = began // the latency of interest is from the scheduler's start
	}
	go s.Run(ctx)
	return report(w, sc, n, began, 0, started, timeout)
}

// bindWatch notes when an informer first sees each pod bound.
type bindWatch struct {
	mu    sync.Mutex
	bound map[string]map[string]time.Time // namespace -> name -> seen bound
}

func newBindWatch(ctx context.Context, c *kubernetes.Clientset) *bindWatch {
	w := &bindWatch{bound: map[string]map[string]time.Time{}}
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithTransform(benchapi.PodSkeleton))
	note := func(obj any) {
		pod := obj.(*corev1.Pod)
		if pod.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		ns := w.bound[pod.Namespace]
		if ns == nil {
			ns = map[string]time.Time{}
			w.bound[pod.Namespace] = ns
		}
		if _, seen := ns[pod.Name]; !seen {
			ns[pod.Name] = now
		}
	}
	_, _ = f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return w
}

func (w *bindWatch) boundIn(ns string) map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]time.Time, len(w.bound[ns]))
	for k, v := range w.bound[ns] {
		out[k] = v
	}
	return out
}
