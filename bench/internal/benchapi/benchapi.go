// Package benchapi runs miniapi in-process for the control-plane benchmarks and gives them
// what they share: an admin client, fake Ready nodes, parallel clients, and the figures
// they print about the machine and the process.
package benchapi

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minik8s/minik8s/bench/internal/kubeclient"
	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Start runs miniapi on bolt in a temporary directory until ctx ends and returns an admin
// client (rate limits lifted) and a channel with Run's result. The fake nodes post no
// heartbeats, so the node lifecycle controller is off.
func Start(ctx context.Context) (*kubernetes.Clientset, <-chan error, error) {
	controlplane.TuneRuntime(ctx, controlplane.DefaultMemoryLimit)
	dir, err := os.MkdirTemp("", "benchapi-")
	if err != nil {
		return nil, nil, err
	}
	port, err := freeport.One()
	if err != nil {
		return nil, nil, err
	}
	o := controlplane.Options{DataDir: dir, BindAddress: "127.0.0.1", SecurePort: port, Store: "bolt", ServiceRange: clusterdefaults.ServiceCIDR,
		Controllers: []string{"*", "-nodelifecycle"}, ClusterCIDR: "10.128.0.0/9", // room for 5000 nodes' /24s
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	done := make(chan error, 1)
	go func() {
		err := controlplane.Run(ctx, o)
		os.RemoveAll(dir) // before done: the benchmark exits as soon as it reads it
		done <- err
	}()
	c, err := kubeclient.Wait(ctx, controlplane.AdminKubeconfig(o.DataDir), 30*time.Second)
	if err != nil {
		return nil, nil, err
	}
	return c, done, nil
}

// CreateNodes makes Ready nodes fake-<from>..fake-<to-1> (110 pods, 32 cpu, 128Gi each),
// labelled with their hostname and one of ten zones, and waits until the node IPAM
// controller has given each its pod CIDR: a measurement started before would count that
// controller's work on thousands of new nodes as the pods'.
func CreateNodes(ctx context.Context, c kubernetes.Interface, from, to int) error {
	if err := createNodes(ctx, c, from, to); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if n.Spec.PodCIDR == "" {
				return false, nil
			}
		}
		return len(nodes.Items) >= to, nil
	})
}

func createNodes(ctx context.Context, c kubernetes.Interface, from, to int) error {
	return Parallel(16, to-from, func(i int) error {
		i += from
		name := fmt.Sprintf("fake-%04d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%10)}}}
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
			if cur, err = c.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil || len(cur.Spec.Taints) == 0 {
				return err
			}
			// kube-apiserver's TaintNodesByCondition admission gave the new node the
			// not-ready taint, which only the node lifecycle controller (off for nodes
			// that post no heartbeats) would take away.
			cur.Spec.Taints = nil
			_, err = c.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	})
}

// Namespace creates namespace name (if it does not exist) and waits for its default
// ServiceAccount, which pods need (ServiceAccount admission), as Kubernetes' e2e framework
// does: timed creates must not race the serviceaccount controller, whose moment of delay
// the admission plugin waits out in 100-200 ms steps.
func Namespace(ctx context.Context, c kubernetes.Interface, name string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("namespace %s has no default ServiceAccount: %w", name, err)
	}
	return nil
}

// Parallel calls do(0..n-1) from workers goroutines and returns the first error.
func Parallel(workers, n int, do func(i int) error) error {
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

// Percentile is the p-th percentile (0..1) of ds; it sorts ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[int(float64(len(ds)-1)*p)]
}

// PeakRSS is this process's VmHWM.
func PeakRSS() string {
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

// LoadAverage is the machine's 1, 5 and 15 minute load average.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// StartCPUProfile starts a CPU profile into file (none when file is empty); stop ends it and
// closes the file.
func StartCPUProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// WriteHeapProfile writes the live heap (after a collection) to file.
func WriteHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	return pprof.Lookup("heap").WriteTo(f, 0)
}

// Pod is a pod as a workload controller would create it: labels, one container with
// requests, a schedulerName no scheduler serves (the benchmark measures the API, not
// scheduling).
func Pod(ns string, i int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + strconv.FormatInt(i, 10), Namespace: ns,
			Labels: map[string]string{"app": "bench", "shard": strconv.FormatInt(i%16, 10)}},
		Spec: corev1.PodSpec{
			SchedulerName: "apibench-none",
			Containers: []corev1.Container{{
				Name: "app", Image: "localhost/minik8s/netexec:v1",
				Args:  []string{"--http-port=8080"},
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Name: "http"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
			}},
		},
	}
}

// PodSkeleton is an informer transform keeping of a pod only what the benchmarks read
// (name, namespace, uid, node): their own informer must not weigh on the process's RSS,
// which is meant to show miniapi's.
func PodSkeleton(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Spec: corev1.PodSpec{NodeName: pod.Spec.NodeName}}, nil
}
