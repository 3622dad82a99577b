// Command controllerbench measures the workload controllers through the real API: a
// Deployment scaled from 0 to N replicas on M fake Ready nodes, timing from the scale
// request until every pod exists (the ReplicaSet controller's work) and until every pod is
// bound (the scheduler's), against a baseline from the same run: the same number of bare
// pods created by clients directly, timed until bound. It prints miniapi's peak RSS (the
// process also holds the benchmark's clients and informer).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func main() {
	nodes := flag.Int("nodes", 500, "fake Ready nodes")
	replicas := flag.Int("replicas", 3000, "pods to create")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long per phase")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the Deployment phase to this file")
	memProfile := flag.String("memprofile", "", "write a heap profile (live objects after a collection) at the end to this file")
	flag.Parse()
	if err := run(*nodes, *replicas, *timeout, *cpuProfile, *memProfile); err != nil {
		fmt.Fprintln(os.Stderr, "controllerbench:", err)
		os.Exit(1)
	}
}

func run(nodes, replicas int, timeout time.Duration, cpuProfile, memProfile string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, done, err := benchapi.Start(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("controllerbench: %d nodes, %d pods, load average %s\n", nodes, replicas, benchapi.LoadAverage())
	if err := benchapi.CreateNodes(ctx, client, 0, nodes); err != nil {
		return err
	}
	watch := newPodWatch(ctx, client)

	// Baseline: bare pods created by 16 clients, timed until every one is bound.
	createPods, err := barePods(ctx, client, "baseline", replicas)
	if err != nil {
		return err
	}
	base, err := phase(ctx, watch, "baseline", replicas, timeout, createPods)
	if err != nil {
		return err
	}
	fmt.Printf("baseline (bare pods from 16 clients): all created %6.2fs (%5.0f pods/s), all bound %6.2fs (%5.0f pods/s)\n",
		base.created.Seconds(), float64(replicas)/base.created.Seconds(), base.bound.Seconds(), float64(replicas)/base.bound.Seconds())

	// The Deployment scaled from 0 to replicas.
	scale, err := deploymentScale(ctx, client, "bench", replicas)
	if err != nil {
		return err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	cpu := benchapi.ProcessCPU()
	dep, err := phase(ctx, watch, "bench", replicas, timeout, scale)
	if err != nil {
		return err
	}
	fmt.Printf("deployment 0 -> %d:               all created %6.2fs (%5.0f pods/s), all bound %6.2fs (%5.0f pods/s)\n",
		replicas, dep.created.Seconds(), float64(replicas)/dep.created.Seconds(), dep.bound.Seconds(), float64(replicas)/dep.bound.Seconds())
	pprof.StopCPUProfile()
	fmt.Printf("deployment phase: process CPU %.2f ms per pod\n", float64((benchapi.ProcessCPU()-cpu).Microseconds())/1000/float64(replicas))
	fmt.Printf("peak RSS of the process (miniapi + benchmark clients): %s\n", benchapi.PeakRSS())
	if memProfile != "" {
		if err := benchapi.WriteHeapProfile(memProfile); err != nil {
			return err
		}
	}
	cancel()
	return <-done
}

func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/netexec:v1"}}}}
}

// barePods prepares namespace ns and returns what creates n bare pods in it from 16 clients.
func barePods(ctx context.Context, c *kubernetes.Clientset, ns string, n int) (func() error, error) {
	if err := benchapi.Namespace(ctx, c, ns); err != nil {
		return nil, err
	}
	t := template()
	return func() error {
		return benchapi.Parallel(16, n, func(i int) error {
			_, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Labels: t.Labels}, Spec: t.Spec}, metav1.CreateOptions{})
			return err
		})
	}, nil
}

// deploymentScale prepares a Deployment of 0 replicas in namespace ns, waits for its
// ReplicaSet, and returns what scales it to n.
func deploymentScale(ctx context.Context, c *kubernetes.Clientset, ns string, n int) (func() error, error) {
	if err := benchapi.Namespace(ctx, c, ns); err != nil {
		return nil, err
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bench"}}, Template: template()}}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sets, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(sets.Items) == 1, nil
	}); err != nil {
		return nil, fmt.Errorf("deployment %s/web has no ReplicaSet: %w", ns, err)
	}
	return func() error {
		scale, err := c.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = int32(n)
		_, err = c.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		return err
	}, nil
}

// podWatch counts pods and bound pods per namespace from an informer.
type podWatch struct {
	mu             sync.Mutex
	created, bound map[string]int
	changed        chan struct{}
}

func newPodWatch(ctx context.Context, c *kubernetes.Clientset) *podWatch {
	w := &podWatch{created: map[string]int{}, bound: map[string]int{}, changed: make(chan struct{}, 1)}
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithTransform(benchapi.PodSkeleton))
	seenBound := sync.Map{}
	note := func(obj any, added bool) {
		pod := obj.(*corev1.Pod)
		w.mu.Lock()
		if added {
			w.created[pod.Namespace]++
		}
		if pod.Spec.NodeName != "" {
			if _, dup := seenBound.LoadOrStore(pod.UID, true); !dup {
				w.bound[pod.Namespace]++
			}
		}
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	_, _ = f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { note(obj, true) }, UpdateFunc: func(_, obj any) { note(obj, false) }})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return w
}

type timing struct{ created, bound time.Duration }

// phase runs start and times until n pods of ns exist and until all are bound.
func phase(ctx context.Context, w *podWatch, ns string, n int, timeout time.Duration, start func() error) (timing, error) {
	began := time.Now()
	if err := start(); err != nil {
		return timing{}, err
	}
	var t timing
	deadline := time.After(timeout)
	for t.bound == 0 {
		w.mu.Lock()
		created, bound := w.created[ns], w.bound[ns]
		w.mu.Unlock()
		if t.created == 0 && created >= n {
			t.created = time.Since(began)
		}
		if created >= n && bound >= n {
			t.bound = time.Since(began)
			break
		}
		select {
		case <-w.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			return t, fmt.Errorf("%s: after %v only %d pods exist and %d are bound", ns, timeout, created, bound)
		case <-ctx.Done():
			return t, ctx.Err()
		}
	}
	return t, nil
}
