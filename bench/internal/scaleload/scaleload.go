// Package scaleload is the workload controllers' load of the benchmarks that measure them
// (controllerbench in-process, membench against a miniapi or kube-apiserver process): a
// Deployment scaled from 0 to N replicas, or N bare pods from clients, timed from the
// request until every pod exists and until every pod is bound, as an informer sees them.
package scaleload

import (
	"context"
	"fmt"
	"io"
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
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Template is the pods' template: one container, no requests.
func Template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/netexec:v1"}}}}
}

// BarePods prepares namespace ns and returns what creates n bare pods in it from 16 clients.
func BarePods(ctx context.Context, c *kubernetes.Clientset, ns string, n int) (func() error, error) {
	if err := benchapi.Namespace(ctx, c, ns); err != nil {
		return nil, err
	}
	t := Template()
	return func() error {
		return benchapi.Parallel(16, n, func(i int) error {
			_, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Labels: t.Labels}, Spec: t.Spec}, metav1.CreateOptions{})
			return err
		})
	}, nil
}

// DeploymentScale prepares a Deployment of 0 replicas in namespace ns, waits for its
// ReplicaSet, and returns what scales it to n.
func DeploymentScale(ctx context.Context, c *kubernetes.Clientset, ns string, n int) (func() error, error) {
	if err := benchapi.Namespace(ctx, c, ns); err != nil {
		return nil, err
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bench"}}, Template: Template()}}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sets, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(sets.Items) == 1, nil
	}); err != nil {
		return nil, fmt.Errorf("deployment %s/web has no ReplicaSet: %w", ns, err)
	}
	// The deployment controller may still be writing the Deployment's status: retry on
	// conflict.
	return func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			scale, err := c.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			scale.Spec.Replicas = int32(n)
			_, err = c.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
			return err
		})
	}, nil
}

// PodWatch counts pods and bound pods per namespace from an informer of pod skeletons.
type PodWatch struct {
	mu             sync.Mutex
	created, bound map[string]int
	changed        chan struct{}
}

// NewPodWatch starts the informer until ctx ends and waits for its cache.
func NewPodWatch(ctx context.Context, c *kubernetes.Clientset) *PodWatch {
	w := &PodWatch{created: map[string]int{}, bound: map[string]int{}, changed: make(chan struct{}, 1)}
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

// Timing is how long a phase took until its pods all existed and until all were bound.
type Timing struct{ Created, Bound time.Duration }

// Phase runs start and times until n pods of ns exist and until all are bound. Unless
// progress is nil, it writes the counts there every second.
func (w *PodWatch) Phase(ctx context.Context, ns string, n int, timeout time.Duration, progress io.Writer, start func() error) (Timing, error) {
	began := time.Now()
	if err := start(); err != nil {
		return Timing{}, err
	}
	var t Timing
	deadline := time.After(timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for t.Bound == 0 {
		w.mu.Lock()
		created, bound := w.created[ns], w.bound[ns]
		w.mu.Unlock()
		if t.Created == 0 && created >= n {
			t.Created = time.Since(began)
		}
		if created >= n && bound >= n {
			t.Bound = time.Since(began)
			break
		}
		select {
		case <-w.changed:
		case <-time.After(100 * time.Millisecond):
		case <-tick.C:
			if progress != nil {
				fmt.Fprintf(progress, "#   %s: %5.1fs: %d of %d pods created, %d bound; load %s\n", ns, time.Since(began).Seconds(), created, n, bound, benchapi.LoadAverage())
			}
		case <-deadline:
			return t, fmt.Errorf("%s: after %v only %d pods exist and %d are bound", ns, timeout, created, bound)
		case <-ctx.Done():
			return t, ctx.Err()
		}
	}
	return t, nil
}
