// Command podbench measures how fast minilet starts pods and what it costs, on a one-node
// minilab cluster with the image present: the baseline is single pods created one at a
// time; then a burst of pods created at once, each timed from its create call to the
// Running phase seen through a watch (Kubernetes' pod startup SLO measures the same,
// 5 s at p99); then the node filled to its 110 pods. minilet's RSS is printed with 0 pods,
// beside two floors (floor.go: a bare client-go process watching the node's pods and Node
// through the clientset, and through a core/v1 REST client alone),
// and with 110, and its CPU share while 110 pods just run. For the burst it also prints
// who spent the host's CPU per pod (minilet, the CNI plugins, containerd, shims and runc,
// the rest) and the p50/p99 of each step of minilet's start of a pod, from its log.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/bench/internal/benchlab"
	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

func main() {
	burst := flag.Int("burst", 30, "pods created at once")
	full := flag.Int("full", 110, "pods run on the node at the end (its max-pods; 0: skip)")
	singles := flag.Int("singles", 5, "pods created one at a time for the baseline")
	bin := flag.String("bin", "bin", "directory of miniapi, minilet, miniproxy")
	images := flag.String("images", "images/out", "directory of the image tarballs")
	flag.Parse()
	if err := run(*singles, *burst, *full, *bin, *images); err != nil {
		fmt.Fprintln(os.Stderr, "podbench:", err)
		os.Exit(1)
	}
}

func run(singles, burst, full int, bin, images string) error {
	ctx := context.Background()
	floorDir, err := os.MkdirTemp("", "podbench-floor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(floorDir)
	floorBin, err := buildFloor(floorDir, "listwatch")
	if err != nil {
		return err
	}
	coreFloorBin, err := buildFloor(floorDir, "corewatch")
	if err != nil {
		return err
	}
	l, down, err := benchlab.Up(ctx, "podbench", bin, images)
	if err != nil {
		return err
	}
	defer down()
	cfg, err := cluster.RESTConfig(l)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400 // the benchmark's own client must not be what is measured
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pid, containerd, err := proc.NodePIDs(l)
	if err != nil {
		return err
	}
	const settle = 10 * time.Second
	time.Sleep(settle) // let start-up work settle
	idle, err := proc.RSSMiB(pid)
	if err != nil {
		return err
	}
	anon, file, err := proc.RSSParts(pid)
	if err != nil {
		return err
	}
	heapInuse, heapAlloc, err := goHeap(ctx, client, l.Nodes[0].Name) // after the RSS: serving /metrics allocates
	if err != nil {
		return err
	}
	fmt.Printf("minilet RSS with 0 pods: %.1f MiB (target <= 47.7 MiB, 50 MB): %.1f MiB anonymous (heap, stacks), %.1f MiB of its binary's pages; Go heap %.1f MiB in use, %.1f MiB allocated\n", idle, anon, file, heapInuse, heapAlloc)
	floor, floorAnon, floorFile, err := floorRSS(floorBin, l, settle)
	if err != nil {
		return err
	}
	fmt.Printf("floor, client-go's clientset and informers doing LIST+WATCH of the node's pods and Node (bench/podbench/listwatch): %.1f MiB: %.1f MiB anonymous, %.1f MiB of its binary's pages; minilet above it %.1f MiB\n",
		floor, floorAnon, floorFile, idle-floor)
	core, coreAnon, coreFile, err := floorRSS(coreFloorBin, l, settle)
	if err != nil {
		return err
	}
	fmt.Printf("narrow floor, the same through a REST client of core/v1 alone, no clientset (bench/podbench/corewatch): %.1f MiB: %.1f MiB anonymous, %.1f MiB of its binary's pages; the clientset costs %.1f MiB\n",
		core, coreAnon, coreFile, floor-core)

	var single []time.Duration
	for i := range singles {
		d, err := startPods(ctx, client, fmt.Sprintf("single-%d", i), 1)
		if err != nil {
			return err
		}
		single = append(single, d...)
	}
	printLatencies("baseline: 1 pod at a time", single)
	if err := deleteAll(ctx, client); err != nil {
		return err
	}

	_, cpus, err := proc.HostCPU()
	if err != nil {
		return err
	}
	before, err := readSplit(l, pid, containerd)
	if err != nil {
		return err
	}
	d, err := startPods(ctx, client, "burst", burst)
	if err != nil {
		return err
	}
	after, err := readSplit(l, pid, containerd)
	if err != nil {
		return err
	}
	printLatencies(fmt.Sprintf("%d pods at once", burst), d)
	perPod := (after.host - before.host) / time.Duration(burst)
	fmt.Printf("the burst took %v of host CPU per pod: with %d CPUs no burst of %d ends before %v\n",
		perPod.Round(time.Millisecond), cpus, burst, (perPod * time.Duration(burst) / time.Duration(cpus)).Round(10*time.Millisecond))
	printSplit(before, after, burst)
	if err := printSteps(l, l.Nodes[0].Name, "burst"); err != nil {
		return err
	}
	fmt.Printf("target: p99 <= 1s for the burst (Kubernetes' SLO: 5s)\n")
	if err := deleteAll(ctx, client); err != nil {
		return err
	}
	if full == 0 {
		return nil
	}

	d, err = startPods(ctx, client, "full", full)
	if err != nil {
		return err
	}
	printLatencies(fmt.Sprintf("%d pods at once (node full)", full), d)
	time.Sleep(10 * time.Second)
	rss, err := proc.RSSMiB(pid)
	if err != nil {
		return err
	}
	cpu, err := proc.CPUShare(pid, 30*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("minilet with %d pods running: RSS %.1f MiB, CPU %.1f%% of one core (30 s)\n", full, rss, 100*cpu)
	return deleteAll(ctx, client)
}

// startPods creates n pods at once and returns, for each, the time from its create call
// to the first Running phase the watch shows.
func startPods(ctx context.Context, client kubernetes.Interface, prefix string, n int) ([]time.Duration, error) {
	pods := client.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	created := make([]time.Time, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created[i] = time.Now()
			if _, err := pods.Create(ctx, benchPod(fmt.Sprintf("%s-%d", prefix, i)), metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	running := map[string]time.Time{}
	deadline := time.After(5 * time.Minute)
	lastReport := time.Now()
	for len(running) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("watch ended with %d/%d pods Running", len(running), n)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted || p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Name, prefix+"-") {
				continue
			}
			if _, seen := running[p.Name]; !seen {
				running[p.Name] = time.Now()
			}
			if time.Since(lastReport) > 5*time.Second {
				fmt.Printf("podbench: %d/%d pods Running\n", len(running), n)
				lastReport = time.Now()
			}
		case <-deadline:
			return nil, fmt.Errorf("only %d/%d pods Running after 5 minutes", len(running), n)
		}
	}
	out := make([]time.Duration, 0, n)
	for i := range n {
		out = append(out, running[fmt.Sprintf("%s-%d", prefix, i)].Sub(created[i]))
	}
	return out, nil
}

func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "podbench"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "app", Image: "localhost/minik8s/busybox:v1", Command: []string{"sleep", "3600"}}},
		},
	}
}

// deleteAll deletes the benchmark's pods and waits until they are gone.
func deleteAll(ctx context.Context, client kubernetes.Interface) error {
	pods := client.CoreV1().Pods("default")
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=podbench"}); err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=podbench"})
		if err == nil && len(list.Items) == 0 {
			return nil
		}
	}
	return fmt.Errorf("pods still there 5 minutes after deleting them")
}

func printLatencies(label string, d []time.Duration) {
	slices.Sort(d)
	pct := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	fmt.Printf("%-32s create->Running  p50 %6dms  p99 %6dms  max %6dms  (%d pods)\n",
		label, pct(0.50).Milliseconds(), pct(0.99).Milliseconds(), d[len(d)-1].Milliseconds(), len(d))
}
