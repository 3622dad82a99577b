// Command habench measures a highly available API in one run: three miniapi on a
// three-member etcd (TLS, as minilab up --control-planes 3 runs them), then three
// kube-apiservers on the same etcd cluster under another prefix. For each it measures
// creates/s with client-go clients spread over the three servers, watch delivery (a
// watcher on one server, creates on another: from the create's answer to the event), the
// longest write gap of clients behind a balancer (pkg/lab/apilb) when one server is killed
// with SIGKILL, and each server's peak RSS. kube-apiserver is the one
// hack/kube-build.sh kube-apiserver builds from the published k8s.io/kubernetes module. See
// docs/performance.md.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/bench/internal/apiproc"
	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	"github.com/minik8s/minik8s/pkg/lab/apilb"
	"github.com/minik8s/minik8s/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

type config struct {
	duration    time.Duration
	clients     int
	watchRate   int
	miniapi     string
	kubeAPI     string
	failover    bool
	failoverRun time.Duration
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long the create and watch phases run")
	flag.IntVar(&cfg.clients, "clients", 48, "concurrent client-go clients of the create phase, spread over the three servers")
	flag.IntVar(&cfg.watchRate, "watch-rate", 100, "creates/s offered in the watch phase")
	flag.StringVar(&cfg.miniapi, "miniapi", "bin/miniapi", "miniapi binary")
	flag.StringVar(&cfg.kubeAPI, "kube-apiserver", "", "kube-apiserver binary (hack/kube-build.sh kube-apiserver prints it); empty: miniapi only")
	flag.BoolVar(&cfg.failover, "failover", true, "kill one server with SIGKILL under load and time the clients' longest write gap")
	flag.DurationVar(&cfg.failoverRun, "failover-duration", 15*time.Second, "how long the failover phase writes (the kill comes after a third of it)")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "habench:", err)
		os.Exit(1)
	}
}

// figures are one kind of server's results.
type figures struct {
	name                      string
	creates                   benchapi.Latencies
	watch, watchSent          benchapi.Latencies // from the create's answer (negative: the event came first), from its sending
	beforeAck, missed         int
	cpuPerCreate              time.Duration // the three servers' CPU time over the creates
	gap, gapBefore            time.Duration // longest write gap from the kill on, and before it (the same load's own)
	failoverErrors, failoverN int
	rss                       []float64 // peak MiB, per server
}

func run(cfg config) error {
	work, err := os.MkdirTemp("", "habench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fmt.Printf("# habench: 3 API servers on a 3-member etcd (TLS), %s per phase, %d create clients, watch at %d creates/s; %d CPUs; load average %s\n",
		cfg.duration, cfg.clients, cfg.watchRate, runtime.NumCPU(), benchapi.LoadAverage())
	etcd, err := etcdtest.StartCluster(filepath.Join(work, "etcd"), etcdtest.Options{Members: 3, TLS: true})
	if err != nil {
		return err
	}
	defer etcd.Stop()
	ca, saKey, err := apiproc.EnsurePKI(filepath.Join(work, "pki"))
	if err != nil {
		return err
	}
	kinds := []struct {
		name string
		args func(i int) apiproc.Args
	}{{"miniapi", func(i int) apiproc.Args {
		return apiproc.MiniapiArgs(cfg.miniapi, etcd, saKey, "--leader-elect", "--hostname-override", fmt.Sprintf("habench-%d", i))
	}}}
	if cfg.kubeAPI != "" {
		kinds = append(kinds, struct {
			name string
			args func(i int) apiproc.Args
		}{"kube-apiserver", func(int) apiproc.Args { return apiproc.KubeAPIServerArgs(cfg.kubeAPI, etcd, "/habench-kube", saKey) }})
	} else {
		fmt.Println("# kube-apiserver: not measured (no -kube-apiserver)")
	}
	var all []figures
	for _, k := range kinds {
		fmt.Printf("\n## %s x3\n", k.name)
		f, err := measure(cfg, ca, filepath.Join(work, "pki"), filepath.Join(work, k.name), k.name, k.args)
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		all = append(all, f)
	}
	printTable(cfg, all)
	fmt.Printf("\n# load average at the end: %s\n", benchapi.LoadAverage())
	return nil
}

// measure starts three servers of a kind, runs every phase on them and stops them.
func measure(cfg config, ca *pki.CA, caDir, dir, name string, args func(i int) apiproc.Args) (figures, error) {
	f := figures{name: name}
	var servers []*apiproc.Server
	defer func() {
		for _, s := range servers {
			s.Stop()
		}
	}()
	for i := range 3 {
		s, err := apiproc.Start(ca, caDir, filepath.Join(dir, fmt.Sprint(i)), fmt.Sprintf("%s-%d", name, i), args(i))
		if err != nil {
			return f, err
		}
		servers = append(servers, s)
	}
	start := time.Now()
	for _, s := range servers {
		if err := s.WaitReady(90 * time.Second); err != nil {
			return f, err
		}
	}
	fmt.Printf("ready     3 servers in %s\n", time.Since(start).Round(10*time.Millisecond))
	const ns = "habench"
	if err := apiproc.Namespace(servers, ns); err != nil {
		return f, err
	}
	cpu0, err := serversCPU(servers)
	if err != nil {
		return f, err
	}
	if f.creates, err = createPhase(cfg, servers, ns); err != nil {
		return f, err
	}
	cpu1, err := serversCPU(servers)
	if err != nil {
		return f, err
	}
	f.cpuPerCreate = (cpu1 - cpu0) / time.Duration(max(len(f.creates.Each), 1))
	fmt.Printf("creates   %d clients over 3 servers: %.0f/s, p50 %s, p99 %s; servers' CPU %s per create\n",
		cfg.clients, f.creates.PerSecond(), f.creates.P(50), f.creates.P(99), f.cpuPerCreate.Round(time.Microsecond))
	if f.watch, f.watchSent, f.beforeAck, f.missed, err = watchPhase(cfg, servers, ns); err != nil {
		return f, err
	}
	fmt.Printf("watch     %d creates/s on server 1, watcher on server 0: from the create's answer p50 %s, p99 %s (%d of %d events came before the answer, %d missed); from its sending p50 %s, p99 %s\n",
		cfg.watchRate, f.watch.P(50), f.watch.P(99), f.beforeAck, len(f.watch.Each), f.missed, f.watchSent.P(50), f.watchSent.P(99))
	for _, s := range servers {
		rss, err := proc.PeakRSSMiB(s.PID())
		if err != nil {
			return f, err
		}
		f.rss = append(f.rss, rss)
	}
	fmt.Printf("memory    peak RSS %s MiB\n", joinMiB(f.rss))
	if cfg.failover {
		if f.gap, f.gapBefore, f.failoverN, f.failoverErrors, err = failoverPhase(cfg, ca, servers, ns); err != nil {
			return f, err
		}
		fmt.Printf("failover  %s killed with SIGKILL under load: longest write gap from the kill on %s, before it %s (%d creates, %d failed)\n",
			servers[2].Name, f.gap.Round(time.Millisecond), f.gapBefore.Round(time.Millisecond), f.failoverN, f.failoverErrors)
	}
	return f, nil
}

// serversCPU is the CPU time the servers used so far: per create, a figure that depends
// less on how busy the machine is than creates/s.
func serversCPU(servers []*apiproc.Server) (time.Duration, error) {
	var sum time.Duration
	for _, s := range servers {
		t, err := proc.CPUTime(s.PID())
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// createPhase runs cfg.clients closed-loop creators, client i on server i%3.
func createPhase(cfg config, servers []*apiproc.Server, ns string) (benchapi.Latencies, error) {
	var clients []*kubernetes.Clientset
	for i := range cfg.clients {
		c, err := servers[i%len(servers)].Clients(1)
		if err != nil {
			return benchapi.Latencies{}, err
		}
		clients = append(clients, c[0])
	}
	end := time.Now().Add(cfg.duration)
	return benchapi.ClosedLoop(clients, func(int) bool { return time.Now().Before(end) }, func(c *kubernetes.Clientset, w, i int) error {
		pod := benchapi.Pod(ns, int64(i))
		pod.Name = fmt.Sprintf("create-%d-%d", w, i)
		_, err := c.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
		return err
	})
}

// watchPhase watches pods on server 0 while one client of server 1 creates watchRate
// pods a second; a pod's delivery is from the create's answer to its ADDED event
// (negative when the event came first, which beforeAck counts), and from its sending.
func watchPhase(cfg config, servers []*apiproc.Server, ns string) (lat, fromSent benchapi.Latencies, beforeAck, missed int, err error) {
	watcher, err := servers[0].Clients(1)
	if err != nil {
		return lat, fromSent, 0, 0, err
	}
	creator, err := servers[1].Clients(1)
	if err != nil {
		return lat, fromSent, 0, 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	list, err := watcher[0].CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return lat, fromSent, 0, 0, err
	}
	w, err := watcher[0].CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, LabelSelector: "habench=watch"})
	if err != nil {
		return lat, fromSent, 0, 0, err
	}
	defer w.Stop()
	var mu sync.Mutex
	sent, acked, seen := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				mu.Lock()
				seen[pod.Name] = time.Now()
				mu.Unlock()
			}
		}
	}()
	interval := time.Second / time.Duration(cfg.watchRate)
	total := int(cfg.duration / interval)
	start := time.Now()
	var wg sync.WaitGroup
	var failed error
	for i := range total {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		wg.Go(func() {
			pod := benchapi.Pod(ns, int64(i))
			pod.Name, pod.Labels["habench"] = fmt.Sprintf("watch-%d", i), "watch"
			t := time.Now()
			_, err := creator[0].CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = cmp.Or(failed, err)
				return
			}
			acked[pod.Name], sent[pod.Name] = time.Now(), t
		})
	}
	wg.Wait()
	if failed != nil {
		return lat, fromSent, 0, 0, failed
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= len(acked) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for name, a := range acked {
		e, ok := seen[name]
		switch {
		case !ok:
			missed++
		default:
			if e.Before(a) {
				beforeAck++
			}
			lat.Each = append(lat.Each, e.Sub(a))
			fromSent.Each = append(fromSent.Each, e.Sub(sent[name]))
		}
	}
	return lat, fromSent, beforeAck, missed, nil
}

// failoverPhase runs writers through an API balancer in front of the three servers (as
// minilab's apilb, checking /readyz), kills server 2 with SIGKILL after a third of the
// phase and returns the longest time any writer went without a successful create, in
// the gaps that end after the kill and in those that end before it.
func failoverPhase(cfg config, ca *pki.CA, servers []*apiproc.Server, ns string) (gap, gapBefore time.Duration, creates, failed int, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	lb := &apilb.Balancer{Check: apilb.ReadyzCheck(ca.CertPool())}
	for _, s := range servers {
		lb.Backends = append(lb.Backends, strings.TrimPrefix(s.URL, "https://"))
	}
	lbDone := make(chan error, 1)
	go func() { lbDone <- lb.Serve(ctx, ln) }()
	defer func() { cancel(); <-lbDone }()
	kubeconfig := filepath.Join(filepath.Dir(servers[0].Kubeconfig), "lb.kubeconfig")
	if err := ca.WriteKubeconfig(kubeconfig, "https://"+ln.Addr().String(), "habench-admin", []string{"system:masters"}); err != nil {
		return 0, 0, 0, 0, err
	}
	const writers = 6 // two connections on each server
	clients, err := apiproc.ClientsOf(kubeconfig, writers)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	var mu sync.Mutex
	start := time.Now()
	end, killAt := start.Add(cfg.failoverRun), start.Add(cfg.failoverRun/3)
	var wg sync.WaitGroup
	for w, c := range clients {
		wg.Go(func() {
			last := time.Now()
			for i := 0; time.Now().Before(end); i++ {
				pod := benchapi.Pod(ns, int64(i))
				pod.Name = fmt.Sprintf("failover-%d-%d", w, i)
				_, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				now := time.Now()
				mu.Lock()
				if err != nil && !apierrors.IsAlreadyExists(err) { // a create answered after its connection broke
					failed++
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				creates++
				if now.Before(killAt) {
					gapBefore = max(gapBefore, now.Sub(last))
				} else {
					gap = max(gap, now.Sub(last))
				}
				mu.Unlock()
				last = now
			}
			mu.Lock()
			gap = max(gap, time.Since(last)) // a writer that never came back
			mu.Unlock()
		})
	}
	time.Sleep(time.Until(killAt))
	servers[2].Kill()
	wg.Wait()
	if creates == 0 {
		return 0, 0, 0, failed, errors.New("no create passed the balancer")
	}
	return gap, gapBefore, creates, failed, nil
}

func printTable(cfg config, all []figures) {
	fmt.Printf("\n%-38s", "")
	for _, f := range all {
		fmt.Printf(" %-24s", f.name+" x3")
	}
	row := func(label string, cell func(f figures) string) {
		fmt.Printf("\n%-38s", label)
		for _, f := range all {
			fmt.Printf(" %-24s", cell(f))
		}
	}
	row(fmt.Sprintf("creates/s, %d clients", cfg.clients), func(f figures) string { return fmt.Sprintf("%.0f", f.creates.PerSecond()) })
	row("create latency p50 / p99", func(f figures) string { return fmt.Sprintf("%s / %s", f.creates.P(50), f.creates.P(99)) })
	row("servers' CPU per create", func(f figures) string { return f.cpuPerCreate.Round(time.Microsecond).String() })
	row(fmt.Sprintf("watch, answer->event p50 / p99, %d/s", cfg.watchRate), func(f figures) string { return fmt.Sprintf("%s / %s", f.watch.P(50), f.watch.P(99)) })
	row("watch, sent->event p50 / p99", func(f figures) string { return fmt.Sprintf("%s / %s", f.watchSent.P(50), f.watchSent.P(99)) })
	if cfg.failover {
		row("longest write gap, 1 of 3 killed", func(f figures) string {
			return fmt.Sprintf("%s (%d failed)", f.gap.Round(time.Millisecond), f.failoverErrors)
		})
		row("longest write gap before the kill", func(f figures) string { return f.gapBefore.Round(time.Millisecond).String() })
	}
	row("peak RSS per server, MiB", func(f figures) string { return joinMiB(f.rss) })
	fmt.Println()
}

func joinMiB(rss []float64) string {
	var parts []string
	for _, r := range rss {
		parts = append(parts, fmt.Sprintf("%.0f", r))
	}
	return strings.Join(parts, " / ")
}
