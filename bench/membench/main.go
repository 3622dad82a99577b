// Command membench measures the memory of a whole control plane under one load, on both
// sides in one run: bin/miniapi as a process on bolt (its scheduler and controllers
// in-process), then kube-apiserver on bin/etcd with kube-scheduler and
// kube-controller-manager beside it (each as hack/kube-build.sh builds it). Its loads
// (-load):
//   - api: client-go pod creates at 1, 16 and 64 clients, a fill to -list-pods pods, typed
//     LISTs of them all, then watchers that each receive every event of a burst of creates;
//   - deployment: -nodes fake Ready nodes, then a Deployment scaled from 0 to -replicas,
//     timed until every pod is bound (the ReplicaSet controller's and the scheduler's work).
//
// Node lifecycle is off on both sides (the fake nodes post no heartbeats). During each
// phase it samples every process's RSS and anonymous RSS (/proc/PID/status) and prints,
// per phase, the throughput or time, both sides' peaks and the API servers' Go heap
// (go_memstats_heap_inuse_bytes at the phase's end). See docs/performance.md.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/minik8s/minik8s/bench/internal/apiproc"
	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/bench/internal/scaleload"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	"github.com/minik8s/minik8s/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

type config struct {
	miniapi, miniapiFlags           string
	kubeAPI, kubeSched, kubeCM      string
	creates, listPods, listRounds   int
	watchers, watchCreates          int
	workload                        string
	nodes, replicas                 int
	deployTimeout                   time.Duration
	profileDir                      string
	sides                           []string
	sampleEvery, idle, readyTimeout time.Duration
}

const ns = "membench"

// clusterCIDR holds a /24 for each of thousands of fake nodes on both sides.
const clusterCIDR = "10.128.0.0/9"

func main() {
	var cfg config
	sides := flag.String("sides", "miniapi,kube", "comma-separated sides to measure: miniapi, kube")
	flag.StringVar(&cfg.miniapi, "miniapi", "bin/miniapi", "miniapi binary")
	flag.StringVar(&cfg.miniapiFlags, "miniapi-flags", "", "extra miniapi flags, space-separated (e.g. --memory-limit=300Mi)")
	flag.StringVar(&cfg.kubeAPI, "kube-apiserver", "", "kube-apiserver binary (hack/kube-build.sh kube-apiserver prints it)")
	flag.StringVar(&cfg.kubeSched, "kube-scheduler", "", "kube-scheduler binary; empty: the kube side runs without it")
	flag.StringVar(&cfg.kubeCM, "kube-controller-manager", "", "kube-controller-manager binary; empty: the kube side runs without it")
	flag.StringVar(&cfg.workload, "load", "api", "the load: api (creates, LIST, watchers) or deployment (a Deployment scaled 0 -> -replicas on -nodes nodes)")
	flag.IntVar(&cfg.nodes, "nodes", 500, "fake Ready nodes of the deployment load")
	flag.IntVar(&cfg.replicas, "replicas", 3000, "the Deployment's replicas in the deployment load")
	flag.DurationVar(&cfg.deployTimeout, "deploy-timeout", 5*time.Minute, "how long the deployment load waits for its pods to be bound")
	flag.IntVar(&cfg.creates, "creates", 3000, "pods created in each of the 1, 16 and 64 client phases")
	flag.IntVar(&cfg.listPods, "list-pods", 10000, "pods stored before the LIST phase (the create phases' and a fill)")
	flag.IntVar(&cfg.listRounds, "list-rounds", 3, "typed LISTs of every pod")
	flag.IntVar(&cfg.watchers, "watchers", 200, "watchers of the watch phase, each on a connection of its own")
	flag.IntVar(&cfg.watchCreates, "watch-creates", 500, "pods created (16 clients) while the watchers watch")
	flag.StringVar(&cfg.profileDir, "heap-profiles", "", "write miniapi's heap profile (/debug/pprof/heap, after a collection) at each phase's end into this directory, and at each phase's highest RSS its heap as of the last collection and its resident pages per mapping (*-at-peak.*)")
	flag.DurationVar(&cfg.sampleEvery, "sample", 100*time.Millisecond, "how often RSS is sampled")
	flag.DurationVar(&cfg.idle, "idle", 5*time.Second, "how long the idle phase samples, after the servers are ready")
	flag.Parse()
	cfg.sides = strings.Split(*sides, ",")
	cfg.readyTimeout = 2 * time.Minute
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "membench:", err)
		os.Exit(1)
	}
}

// process is one process of a side whose memory is sampled.
type process struct {
	name string
	pid  int
}

// peaks are a phase's highest samples: per process, and of the side's sum taken at once.
type peaks struct {
	rss, anon       map[string]float64
	sumRSS, sumAnon float64
}

// phase is one phase's figures on one side.
type phase struct {
	name       string
	throughput float64 // in unit
	unit       string
	peaks      peaks
	heapMiB    float64 // the API server's Go heap in use at the phase's end
}

// sideResult is one side's phases and its processes' VmHWM at the end.
type sideResult struct {
	name   string
	procs  []process
	phases []phase
	hwm    map[string]float64
	note   string
}

func run(cfg config) error {
	work, err := os.MkdirTemp("", "membench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	switch cfg.workload {
	case "api":
		fmt.Printf("# membench: %d creates at 1/16/64 clients, LIST of %d pods x%d, %d watchers x %d events", cfg.creates, cfg.listPods, cfg.listRounds, cfg.watchers, cfg.watchCreates)
	case "deployment":
		fmt.Printf("# membench: %d fake Ready nodes, a Deployment scaled 0 -> %d timed until all bound", cfg.nodes, cfg.replicas)
	default:
		return fmt.Errorf("unknown -load %q (api or deployment)", cfg.workload)
	}
	fmt.Printf("; RSS sampled every %s; %d CPUs; load average %s\n", cfg.sampleEvery, runtime.NumCPU(), benchapi.LoadAverage())
	ca, saKey, err := apiproc.EnsurePKI(filepath.Join(work, "pki"))
	if err != nil {
		return err
	}
	var results []sideResult
	for _, side := range cfg.sides {
		var r sideResult
		var err error
		switch side {
		case "miniapi":
			r, err = measureMiniapi(cfg, ca, work)
		case "kube":
			r, err = measureKube(cfg, ca, work, saKey)
		default:
			err = errors.New("unknown side (miniapi or kube)")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", side, err)
		}
		results = append(results, r)
	}
	printTable(results)
	fmt.Printf("\n# load average at the end: %s\n", benchapi.LoadAverage())
	return nil
}

func measureMiniapi(cfg config, ca *pki.CA, work string) (sideResult, error) {
	fmt.Printf("\n## miniapi (bolt; scheduler and controllers in-process)\n")
	s, err := apiproc.Start(ca, filepath.Join(work, "pki"), filepath.Join(work, "miniapi"), "miniapi",
		apiproc.MiniapiArgs(cfg.miniapi, nil, "", append([]string{"--controllers=*,-nodelifecycle", "--cluster-cidr=" + clusterCIDR}, strings.Fields(cfg.miniapiFlags)...)...))
	if err != nil {
		return sideResult{}, err
	}
	defer s.Stop()
	if err := s.WaitReady(cfg.readyTimeout); err != nil {
		return sideResult{}, err
	}
	r := sideResult{name: "miniapi", procs: []process{{"miniapi", s.PID()}}}
	return r, load(cfg, s, &r, cfg.profileDir)
}

func measureKube(cfg config, ca *pki.CA, work, saKey string) (sideResult, error) {
	if cfg.kubeAPI == "" {
		return sideResult{}, errors.New("no -kube-apiserver (hack/kube-build.sh kube-apiserver builds it)")
	}
	fmt.Printf("\n## kube-apiserver on etcd (TLS)")
	etcd, err := etcdtest.StartCluster(filepath.Join(work, "etcd"), etcdtest.Options{TLS: true})
	if err != nil {
		return sideResult{}, err
	}
	defer etcd.Stop()
	s, err := apiproc.Start(ca, filepath.Join(work, "pki"), filepath.Join(work, "kube"), "kube-apiserver",
		apiproc.KubeAPIServerArgs(cfg.kubeAPI, etcd, "/membench", saKey))
	if err != nil {
		return sideResult{}, err
	}
	defer s.Stop()
	r := sideResult{name: "kube", procs: []process{{"kube-apiserver", s.PID()}, {"etcd", etcd.Members[0].PID()}}}
	caFile := filepath.Join(work, "pki", pki.CACertFile)
	components := []struct{ name, binary string }{{"kube-scheduler", cfg.kubeSched}, {"kube-controller-manager", cfg.kubeCM}}
	var missing []string
	for _, c := range components {
		if c.binary == "" {
			missing = append(missing, c.name)
			continue
		}
		fmt.Printf(", %s", c.name)
		// miniapi's in-process clients' rate limits (kube's default, 20 or 50 QPS, would
		// make the deployment load a measure of its client-side limiter).
		args := []string{"--kubeconfig", s.Kubeconfig, "--leader-elect=false", "--secure-port=0", "--kube-api-qps=2000", "--kube-api-burst=4000"}
		if c.name == "kube-controller-manager" {
			args = append(args, "--service-account-private-key-file", saKey, "--root-ca-file", caFile, "--use-service-account-credentials=false",
				"--controllers=*,-node-lifecycle-controller", "--allocate-node-cidrs", "--cluster-cidr="+clusterCIDR, "--node-cidr-mask-size=24",
				"--service-cluster-ip-range="+clusterdefaults.ServiceCIDR)
		}
		cmd, err := startComponent(filepath.Join(work, c.name+".log"), c.binary, args)
		if err != nil {
			return r, err
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		r.procs = append(r.procs, process{c.name, cmd.Process.Pid})
	}
	fmt.Println()
	if len(missing) > 0 {
		r.note = "without " + strings.Join(missing, ", ")
		fmt.Printf("# the kube side runs %s: its figures lack them\n", r.note)
	}
	if err := s.WaitReady(cfg.readyTimeout); err != nil {
		return r, err
	}
	return r, load(cfg, s, &r, "")
}

// startComponent starts a Kubernetes component, logging to logFile; it dies with the
// benchmark.
func startComponent(logFile, binary string, args []string) (*exec.Cmd, error) {
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	return cmd, nil
}

// load runs every phase against server s, sampling the side's processes, and reads
// their VmHWM at the end.
func load(cfg config, s *apiproc.Server, r *sideResult, profileDir string) error {
	if err := apiproc.Namespace([]*apiproc.Server{s}, ns); err != nil {
		return err
	}
	admin, err := s.Clients(1)
	if err != nil {
		return err
	}
	measure := func(name, unit string, do func() (float64, error)) error {
		var onPeak func()
		if profileDir != "" {
			onPeak = func() {
				savePeak(admin[0], r.procs[0].pid, filepath.Join(profileDir, phaseFile(r.name, name, "at-peak")))
			}
		}
		smp := startSampling(r.procs, cfg.sampleEvery, onPeak)
		rate, err := do()
		pk := smp.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		heap, err := heapInUse(admin[0])
		if err != nil {
			return err
		}
		p := phase{name: name, throughput: rate, unit: unit, peaks: pk, heapMiB: heap}
		r.phases = append(r.phases, p)
		fmt.Printf("%-22s %8.1f %-10s peak RSS %5.0f MiB (anon %5.0f)%s; API server's Go heap in use %4.0f MiB; load %s\n",
			name, rate, unit, pk.sumRSS, pk.sumAnon, perProcess(r.procs, pk), heap, benchapi.LoadAverage())
		if profileDir != "" {
			return saveHeapProfile(admin[0], filepath.Join(profileDir, phaseFile(r.name, name, "")+".pb.gz"), true)
		}
		return nil
	}
	if err := measure("idle", "", func() (float64, error) { time.Sleep(cfg.idle); return 0, nil }); err != nil {
		return err
	}
	if cfg.workload == "deployment" {
		err = deploymentLoad(cfg, admin[0], measure)
	} else {
		err = apiLoad(cfg, s, admin[0], measure)
	}
	if err != nil {
		return err
	}
	r.hwm = map[string]float64{}
	for _, pr := range r.procs {
		if r.hwm[pr.name], err = proc.PeakRSSMiB(pr.pid); err != nil {
			return err
		}
	}
	return nil
}

// measureFunc runs a phase named name whose figure do returns, in unit, sampling the
// side's memory.
type measureFunc func(name, unit string, do func() (float64, error)) error

// deploymentLoad makes cfg.nodes fake Ready nodes, then scales a Deployment from 0 to
// cfg.replicas and times it until every pod is bound.
func deploymentLoad(cfg config, c *kubernetes.Clientset, measure measureFunc) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := measure(fmt.Sprintf("%d nodes", cfg.nodes), "s", func() (float64, error) {
		start := time.Now()
		err := benchapi.CreateNodes(ctx, c, 0, cfg.nodes)
		return time.Since(start).Seconds(), err
	}); err != nil {
		return err
	}
	watch := scaleload.NewPodWatch(ctx, c)
	scale, err := scaleload.DeploymentScale(ctx, c, "deploy", cfg.replicas)
	if err != nil {
		return err
	}
	return measure(fmt.Sprintf("deployment 0 -> %d", cfg.replicas), "s bound", func() (float64, error) {
		t, err := watch.Phase(ctx, "deploy", cfg.replicas, cfg.deployTimeout, os.Stdout, scale)
		if err == nil {
			fmt.Printf("#   all created %.2fs, all bound %.2fs (%.0f pods/s)\n", t.Created.Seconds(), t.Bound.Seconds(), float64(cfg.replicas)/t.Bound.Seconds())
		}
		return t.Bound.Seconds(), err
	})
}

// apiLoad runs the API load's phases: creates at 1, 16 and 64 clients, a fill, LISTs
// and watchers.
func apiLoad(cfg config, s *apiproc.Server, admin *kubernetes.Clientset, measure measureFunc) error {
	stored := 1 // Namespace's warm-up pod
	for _, n := range []int{1, 16, 64} {
		if err := measure(fmt.Sprintf("creates, %d client(s)", n), "creates/s", func() (float64, error) {
			l, err := creates(s, n, cfg.creates, fmt.Sprintf("c%d", n))
			stored += cfg.creates
			return float64(cfg.creates) / l.Wall.Seconds(), err
		}); err != nil {
			return err
		}
	}
	if fill := cfg.listPods - stored; fill > 0 {
		if err := measure(fmt.Sprintf("fill to %d pods", cfg.listPods), "creates/s", func() (float64, error) {
			l, err := creates(s, 64, fill, "fill")
			stored += fill
			return float64(fill) / l.Wall.Seconds(), err
		}); err != nil {
			return err
		}
	}
	if err := measure(fmt.Sprintf("LIST of %d pods", stored), "ms/LIST", func() (float64, error) { return list(admin, cfg.listRounds, stored) }); err != nil {
		return err
	}
	return measure(fmt.Sprintf("%d watchers", cfg.watchers), "events/s", func() (float64, error) { return watchers(cfg, s) })
}

// creates makes n pods from clients closed-loop clients, each on its own connection. Its
// latencies may count a worker's last call that found nothing left: rates are n / Wall.
func creates(s *apiproc.Server, clients, n int, prefix string) (benchapi.Latencies, error) {
	cs, err := s.Clients(clients)
	if err != nil {
		return benchapi.Latencies{}, err
	}
	var next atomic.Int64
	return benchapi.ClosedLoop(cs, func(int) bool { return next.Load() < int64(n) }, func(c *kubernetes.Clientset, _, _ int) error {
		i := next.Add(1) - 1
		if i >= int64(n) {
			return nil // another worker took the last one
		}
		pod := benchapi.Pod(ns, i)
		pod.Name = fmt.Sprintf("%s-%d", prefix, i)
		_, err := c.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
		return err
	})
}

// list times rounds typed LISTs of every pod (client-go's decoding included), in ms per
// LIST, and checks each holds want pods.
func list(c *kubernetes.Clientset, rounds, want int) (float64, error) {
	start := time.Now()
	for range rounds {
		pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		if len(pods.Items) != want {
			return 0, fmt.Errorf("LIST got %d pods, want %d", len(pods.Items), want)
		}
	}
	return float64(time.Since(start).Milliseconds()) / float64(rounds), nil
}

// watchers opens cfg.watchers watches of the namespace's pods, each on its own connection,
// creates cfg.watchCreates pods and waits until every watcher got every ADDED event: the
// rate is events delivered per second, from the first create to the last delivery.
func watchers(cfg config, s *apiproc.Server) (float64, error) {
	cs, err := s.Clients(cfg.watchers)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	probe, err := cs[0].CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	var missing atomic.Int64
	missing.Store(int64(cfg.watchers * cfg.watchCreates))
	allSeen := make(chan struct{})
	for _, c := range cs {
		w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: probe.ResourceVersion, LabelSelector: "membench=watch"})
		if err != nil {
			return 0, err
		}
		wg.Go(func() {
			defer w.Stop()
			seen := 0
			for ev := range w.ResultChan() {
				if _, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
					seen++
					if missing.Add(-1) == 0 {
						close(allSeen)
					}
				}
				if seen == cfg.watchCreates {
					return
				}
			}
		})
	}
	start := time.Now()
	creators, err := s.Clients(16)
	if err != nil {
		return 0, err
	}
	var next atomic.Int64
	if _, err := benchapi.ClosedLoop(creators, func(int) bool { return next.Load() < int64(cfg.watchCreates) }, func(c *kubernetes.Clientset, _, _ int) error {
		i := next.Add(1) - 1
		if i >= int64(cfg.watchCreates) {
			return nil
		}
		pod := benchapi.Pod(ns, i)
		pod.Name, pod.Labels["membench"] = fmt.Sprintf("watch-%d", i), "watch"
		_, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	}); err != nil {
		return 0, err
	}
	select {
	case <-allSeen:
	case <-time.After(2 * time.Minute):
		return 0, fmt.Errorf("%d of %d events not delivered after 2m", missing.Load(), cfg.watchers*cfg.watchCreates)
	}
	rate := float64(cfg.watchers*cfg.watchCreates) / time.Since(start).Seconds()
	cancel()
	wg.Wait()
	return rate, nil
}

// sampling reads its processes' RSS every interval until stop.
type sampling struct {
	done  chan struct{}
	out   chan peaks
	procs []process
}

// peakStep is how much the side's RSS must rise above the last peak onPeak saw before
// startSampling calls it again: a heap profile costs the server CPU.
const peakStep = 4.0 // MiB

// startSampling samples procs every interval; onPeak, when not nil, is called whenever
// their summed RSS reaches a new high (by peakStep).
func startSampling(procs []process, every time.Duration, onPeak func()) *sampling {
	s := &sampling{done: make(chan struct{}), out: make(chan peaks), procs: procs}
	go func() {
		p := peaks{rss: map[string]float64{}, anon: map[string]float64{}}
		var lastPeak float64
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			var sumRSS, sumAnon float64
			for _, pr := range procs {
				rss, err1 := proc.RSSMiB(pr.pid)
				anon, _, err2 := proc.RSSParts(pr.pid)
				if err1 != nil || err2 != nil {
					continue // exited: the phase's error says why
				}
				p.rss[pr.name] = max(p.rss[pr.name], rss)
				p.anon[pr.name] = max(p.anon[pr.name], anon)
				sumRSS += rss
				sumAnon += anon
			}
			p.sumRSS, p.sumAnon = max(p.sumRSS, sumRSS), max(p.sumAnon, sumAnon)
			if onPeak != nil && sumRSS >= lastPeak+peakStep {
				lastPeak = sumRSS
				onPeak()
			}
			select {
			case <-s.done:
				s.out <- p
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling, after one last sample, and returns the peaks.
func (s *sampling) stop() peaks {
	close(s.done)
	return <-s.out
}

func perProcess(procs []process, p peaks) string {
	if len(procs) < 2 {
		return ""
	}
	var parts []string
	for _, pr := range procs {
		parts = append(parts, fmt.Sprintf("%s %.0f", pr.name, p.rss[pr.name]))
	}
	return " = " + strings.Join(parts, " + ")
}

// heapInUse is the API server's go_memstats_heap_inuse_bytes from its /metrics, in MiB
// (kube-apiserver exports it too).
func heapInUse(c *kubernetes.Clientset) (float64, error) {
	lines, err := metricLines(c, "go_memstats_heap_inuse_bytes ")
	if err != nil {
		return 0, err
	}
	if len(lines) == 0 {
		return 0, errors.New("no go_memstats_heap_inuse_bytes in /metrics")
	}
	b, err := strconv.ParseFloat(strings.TrimPrefix(lines[0], "go_memstats_heap_inuse_bytes "), 64)
	return b / (1 << 20), err
}

// metricLines are the lines of the API server's /metrics that start with one of prefixes.
func metricLines(c *kubernetes.Clientset, prefixes ...string) ([]string, error) {
	body, err := c.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		for _, p := range prefixes {
			if strings.HasPrefix(sc.Text(), p) {
				lines = append(lines, sc.Text())
				break
			}
		}
	}
	return lines, sc.Err()
}

// phaseFile names a side's file of a phase, with a suffix when not empty.
func phaseFile(side, phase, suffix string) string {
	name := side + "-" + strings.ReplaceAll(phase, " ", "-")
	if suffix != "" {
		name += "-" + suffix
	}
	return name
}

// savePeak writes, at a new high of the server's RSS, its heap profile as of its last
// collection (base.pb.gz: what was live then; collecting now would hide the peak) and its
// resident MiB per mapping (base.txt: anonymous memory, the binary, bolt's mmap). A
// failure only loses the sample.
func savePeak(c *kubernetes.Clientset, pid int, base string) {
	if err := saveHeapProfile(c, base+".pb.gz", false); err != nil {
		fmt.Fprintln(os.Stderr, "membench:", err)
	}
	mappings, err := proc.RSSByMapping(pid)
	if err != nil {
		fmt.Fprintln(os.Stderr, "membench:", err)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", time.Now().Format(time.RFC3339Nano))
	for _, m := range mappings {
		fmt.Fprintf(&b, "%8.1f MiB  %s\n", m.MiB, m.Name)
	}
	// The Go runtime's share of the anonymous memory: heap in use, idle, stacks...
	if metrics, err := metricLines(c, "go_memstats_", "go_goroutines "); err == nil {
		b.WriteString(strings.Join(metrics, "\n") + "\n")
	}
	if err := os.WriteFile(base+".txt", []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "membench:", err)
	}
}

// saveHeapProfile writes the server's heap profile to file; collect: after a collection.
func saveHeapProfile(c *kubernetes.Clientset, file string, collect bool) error {
	req := c.RESTClient().Get().AbsPath("/debug/pprof/heap")
	if collect {
		req = req.Param("gc", "1")
	}
	body, err := req.DoRaw(context.Background())
	if err != nil {
		return fmt.Errorf("GET /debug/pprof/heap: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}

// printTable puts each phase's figures of the sides beside each other, then each
// process's VmHWM.
func printTable(results []sideResult) {
	if len(results) == 0 {
		return
	}
	fmt.Printf("\n%-22s", "phase")
	for _, r := range results {
		fmt.Printf(" | %-38s", r.name+" "+r.note)
	}
	if len(results) == 2 {
		fmt.Printf(" | %s / %s", results[0].name, results[1].name)
	}
	fmt.Println()
	fmt.Printf("%-22s", "")
	for range results {
		fmt.Printf(" | %-38s", "rate, peak RSS (anon) MiB, Go heap MiB")
	}
	fmt.Println()
	for i, p := range results[0].phases {
		fmt.Printf("%-22s", p.name)
		for _, r := range results {
			if i >= len(r.phases) {
				continue
			}
			q := r.phases[i]
			fmt.Printf(" | %-38s", fmt.Sprintf("%6.1f %-9s %5.0f (%5.0f) %5.0f", q.throughput, q.unit, q.peaks.sumRSS, q.peaks.sumAnon, q.heapMiB))
		}
		if len(results) == 2 && i < len(results[1].phases) {
			q := results[1].phases[i]
			fmt.Printf(" | RSS %.2fx", p.peaks.sumRSS/q.peaks.sumRSS)
			switch {
			case q.throughput == 0:
			case strings.HasPrefix(q.unit, "ms"), strings.HasPrefix(q.unit, "s"):
				fmt.Printf(", time %.2fx", p.throughput/q.throughput)
			default:
				fmt.Printf(", rate %.2fx", p.throughput/q.throughput)
			}
		}
		fmt.Println()
	}
	for _, r := range results {
		var parts []string
		var sum float64
		for _, pr := range r.procs {
			hwm := r.hwm[pr.name]
			sum += hwm
			parts = append(parts, fmt.Sprintf("%s %.0f", pr.name, hwm))
		}
		fmt.Printf("peak RSS (VmHWM) of %s: %s MiB (sum %.0f)\n", r.name, strings.Join(parts, ", "), sum)
	}
}
