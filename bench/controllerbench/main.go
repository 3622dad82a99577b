// Command controllerbench measures the workload controllers through the real API: a
// Deployment scaled from 0 to N replicas on M fake Ready nodes, timing until every pod
// exists (the ReplicaSet controller's work) and until every pod is bound (the scheduler's),
// against a baseline from the same run: the same number of bare pods created by clients
// directly, timed until bound. It prints miniapi's peak RSS (the process also holds the
// benchmark's clients and informer).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

func main() {
	nodes := flag.Int("nodes", 500, "fake Ready nodes")
	replicas := flag.Int("replicas", 3000, "pods to create")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long per phase")
	flag.Parse()
	if err := run(*nodes, *replicas, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "controllerbench:", err)
		os.Exit(1)
	}
}

func run(nodes, replicas int, timeout time.Duration) error {
	controlplane.TuneRuntime()
	dir, err := os.MkdirTemp("", "controllerbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	o := controlplane.Options{DataDir: dir, BindAddress: "127.0.0.1", SecurePort: port, Store: "bolt", ServiceRange: "10.96.0.0/12",
		// The fake nodes post no heartbeats: they must not turn unreachable mid-run.
		Controllers: []string{"*", "-nodelifecycle"},
		Log:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(ctx, o) }()
	client, err := connect(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("controllerbench: %d nodes, %d pods, load average %s\n", nodes, replicas, loadAverage())
	if err := createNodes(ctx, client, nodes); err != nil {
		return err
	}
	watch := newPodWatch(ctx, client)

	// Baseline: bare pods created by 16 clients, timed until every one is bound.
	base, err := phase(ctx, watch, "baseline", replicas, timeout, func() error { return createBarePods(ctx, client, "baseline", replicas) })
	if err != nil {
		return err
	}
	fmt.Printf("baseline (bare pods from 16 clients): all created %6.2fs (%5.0f pods/s), all bound %6.2fs (%5.0f pods/s)\n",
		base.created.Seconds(), float64(replicas)/base.created.Seconds(), base.bound.Seconds(), float64(replicas)/base.bound.Seconds())

	// The Deployment scaled from 0 to replicas.
	dep, err := phase(ctx, watch, "bench", replicas, timeout, func() error { return scaleDeployment(ctx, client, "bench", replicas) })
	if err != nil {
		return err
	}
	fmt.Printf("deployment 0 -> %d:               all created %6.2fs (%5.0f pods/s), all bound %6.2fs (%5.0f pods/s)\n",
		replicas, dep.created.Seconds(), float64(replicas)/dep.created.Seconds(), dep.bound.Seconds(), float64(replicas)/dep.bound.Seconds())
	fmt.Printf("peak RSS of the process (miniapi + benchmark clients): %s\n", peakRSS())
	cancel()
	return <-done
}

func connect(ctx context.Context, o controlplane.Options) (*kubernetes.Clientset, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		cfg, err := clientcmd.BuildConfigFromFlags("", controlplane.AdminKubeconfig(o.DataDir))
		if err == nil {
			cfg.QPS, cfg.Burst = 5000, 5000
			var c *kubernetes.Clientset
			if c, err = kubernetes.NewForConfig(cfg); err == nil {
				if _, err = c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
					return c, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("miniapi did not come up: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func createNodes(ctx context.Context, c *kubernetes.Clientset, n int) error {
	return parallel(16, n, func(i int) error {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fake-%04d", i)}}
		if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
		res := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi")}
		// The node IPAM controller writes the new node too: retry on conflict.
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := c.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status = corev1.NodeStatus{Capacity: res, Allocatable: res,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}}
			_, err = c.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	})
}

func parallel(workers, n int, do func(i int) error) error {
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/netexec:v1"}}}}
}

func createBarePods(ctx context.Context, c *kubernetes.Clientset, ns string, n int) error {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	t := template()
	return parallel(16, n, func(i int) error {
		_, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Labels: t.Labels}, Spec: t.Spec}, metav1.CreateOptions{})
		return err
	})
}

func scaleDeployment(ctx context.Context, c *kubernetes.Clientset, ns string, n int) error {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bench"}}, Template: template()}}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	time.Sleep(time.Second) // its ReplicaSet exists at 0 replicas
	scale, err := c.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	scale.Spec.Replicas = int32(n)
	_, err = c.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
	return err
}

// podWatch counts pods and bound pods per namespace from an informer.
type podWatch struct {
	mu             sync.Mutex
	created, bound map[string]int
	changed        chan struct{}
}

func newPodWatch(ctx context.Context, c *kubernetes.Clientset) *podWatch {
	w := &podWatch{created: map[string]int{}, bound: map[string]int{}, changed: make(chan struct{}, 1)}
	f := informers.NewSharedInformerFactory(c, 0)
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

func peakRSS() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:"))
		}
	}
	return "unknown"
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
