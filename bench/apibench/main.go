// Command apibench measures miniapi in-process on loopback: pod creates/s and latency with
// 1, 16 and 64 concurrent client-go clients, create latency at a fixed offered load, and LIST
// of many pods, on bbolt and on etcd. It measures baselines in the same run (a trivial HTTPS
// round trip, the raw store's creates, the API handler called without TLS or clients, an
// HTTPS transfer of a LIST's size) and prints ratios against them, so that figures taken on
// machines of different speed, or on a busy machine, can be compared; after each create phase
// it prints the process's live heap and peak RSS (miniapi and its clients). See docs/performance.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	_ "net/http/pprof"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/bench/internal/kubeclient"
	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/internal/cputime"
	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/apiserver"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	duration   time.Duration
	listPods   int
	listRounds int
	rate       int
	stores     []string
	cpuProfile string
	memProfile string
	pprofAddr  string
	authzModes []string
	audit      filters.AuditOptions
}

func main() {
	var cfg config
	var stores string
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "how long each throughput and fixed-rate phase runs")
	flag.IntVar(&cfg.listPods, "list-pods", 10000, "pods in the namespace the LIST phase reads")
	flag.IntVar(&cfg.listRounds, "list-rounds", 5, "LIST requests timed per client kind")
	flag.IntVar(&cfg.rate, "rate", 1000, "offered creates/s of the fixed-rate phase")
	flag.StringVar(&stores, "stores", "bolt,etcd", "comma-separated engines to measure: bolt, etcd")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.StringVar(&cfg.memProfile, "memprofile", "", "write a heap profile (live objects after a collection) after the last create phase to this file")
	authz := flag.String("authorization-mode", "Node,RBAC", "miniapi's --authorization-mode (AlwaysAllow: authorization off)")
	flag.StringVar(&cfg.pprofAddr, "pprof", "", "serve net/http/pprof on this loopback address during the run (e.g. 127.0.0.1:6060)")
	flag.StringVar(&cfg.audit.PolicyFile, "audit-policy-file", "", "miniapi's --audit-policy-file (empty: no audit log); the log goes to the work directory")
	flag.Parse()
	cfg.stores = strings.Split(stores, ",")
	cfg.authzModes = strings.Split(*authz, ",")
	controlplane.TuneRuntime(context.Background(), controlplane.DefaultMemoryLimit) // as cmd/miniapi does
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "apibench:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	stopProfile, err := benchapi.StartCPUProfile(cfg.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if cfg.pprofAddr != "" {
		if ap, err := netip.ParseAddrPort(cfg.pprofAddr); err != nil || !ap.Addr().IsLoopback() {
			return fmt.Errorf("-pprof %q: want a loopback IP:PORT such as 127.0.0.1:6060", cfg.pprofAddr)
		}
		runtime.SetBlockProfileRate(int(time.Millisecond))
		runtime.SetMutexProfileFraction(10)
		go func() { _ = http.ListenAndServe(cfg.pprofAddr, nil) }() // the default mux has net/http/pprof
	}
	work, err := os.MkdirTemp("", "apibench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	if cfg.audit.PolicyFile != "" {
		cfg.audit.LogPath = filepath.Join(work, "audit.log")
	}
	fmt.Printf("# apibench: %s per phase, %d pods listed, %d creates/s offered, --authorization-mode=%s, --audit-policy-file=%q; %d CPUs, GOMAXPROCS %d, GOGC %d; load average %s\n\n",
		cfg.duration, cfg.listPods, cfg.rate, strings.Join(cfg.authzModes, ","), cfg.audit.PolicyFile, runtime.NumCPU(), runtime.GOMAXPROCS(0), gcPercent(), benchapi.LoadAverage())
	defer func() { fmt.Printf("\n# load average at the end: %s\n", benchapi.LoadAverage()) }()
	rtt, err := trivialHTTPS(cfg.duration)
	if err != nil {
		return err
	}
	fmt.Printf("baseline  trivial HTTPS round trip, 64 clients: %s\n", rtt)
	for _, kind := range cfg.stores {
		if err := benchStore(cfg, kind, filepath.Join(work, kind), rtt); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
	}
	return nil
}

// benchStore runs every phase on one engine.
func benchStore(cfg config, kind, dir string, rtt result) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	storeFlag := "bolt"
	var open func(name string) (store.Interface, error) // a fresh engine for a baseline
	switch kind {
	case "bolt":
		open = func(name string) (store.Interface, error) {
			return store.OpenBolt(filepath.Join(dir, name+".db"), store.BoltOptions{})
		}
	case "etcd":
		if _, err := etcdtest.Binary(); err != nil {
			fmt.Printf("\n## etcd: skipped, %v\n", err)
			return nil
		}
		etcd, err := etcdtest.Start(dir)
		if err != nil {
			return err
		}
		defer etcd.Stop()
		storeFlag = "etcd://" + strings.Join(etcd.HostPorts, ",")
		open = func(name string) (store.Interface, error) {
			return store.OpenEtcd(etcd.Endpoints, "/apibench-"+name, nil)
		}
	default:
		return fmt.Errorf("unknown store %q (bolt or etcd)", kind)
	}
	fmt.Printf("\n## %s\n", kind)
	raw, err := rawStoreCreates(open, cfg.duration)
	if err != nil {
		return err
	}
	fmt.Printf("baseline  raw store creates, 64 writers: %s\n", raw)
	handler, err := handlerCreates(open, cfg.duration)
	if err != nil {
		return err
	}
	fmt.Printf("baseline  API handler alone (no TLS, client-go, informers), 64 callers: %s\n", handler)

	api, err := startMiniapi(filepath.Join(dir, "miniapi"), storeFlag, controlplane.Security{AuthorizationModes: cfg.authzModes, Audit: cfg.audit})
	if err != nil {
		return err
	}
	defer func() { api.stop() }()
	if err := api.printPodSize(); err != nil {
		return err
	}
	// The fixed-rate phase runs twice: into the empty store, and after the other phases have
	// stored theirs (about 28 000 pods on bolt), whose cached copies make each Go collection longer.
	stored := 0
	atRate := func() error {
		r, err := api.measure(fmt.Sprintf("at %d/s offered, %d pods stored", cfg.rate, stored), 64, func(clients []*kubernetes.Clientset) (result, error) {
			return openLoop(clients, fmt.Sprintf("rate-after-%d", stored), cfg.rate, cfg.duration)
		})
		stored += r.ops
		return err
	}
	if err := atRate(); err != nil {
		return err
	}
	for _, n := range []int{1, 16, 64} {
		r, err := api.measure(fmt.Sprintf("%2d clients", n), n, func(clients []*kubernetes.Clientset) (result, error) {
			return closedLoop(clients, fmt.Sprintf("c%d", n), cfg.duration)
		})
		if err != nil {
			return err
		}
		stored += r.ops
		if n == 64 {
			fmt.Printf("ratio     64 clients vs baselines: creates/s %.2f of the raw store's, %.2f of the handler's; CPU/op %.1fx the handler's; p50 %.1fx the trivial round trip's\n",
				r.perSecond()/raw.perSecond(), r.perSecond()/handler.perSecond(),
				r.cpuPerOp().Seconds()/handler.cpuPerOp().Seconds(), float64(r.p(50))/float64(rtt.p(50)))
		}
	}
	if err := atRate(); err != nil {
		return err
	}
	if err := printMemory(stored, cfg.memProfile); err != nil {
		return err
	}
	return benchList(cfg, api)
}

// printMemory prints the live heap after a collection and RSS with stored pods in the
// store: what miniapi keeps per pod (the benchmark's clients keep none), a figure that does
// not depend on the machine's load. It writes the heap profile to file if one is named.
func printMemory(stored int, file string) error {
	if file != "" {
		if err := benchapi.WriteHeapProfile(file); err != nil { // after a collection
			return err
		}
	} else {
		runtime.GC()
	}
	live := readGC().liveHeap
	rss, err := proc.RSSMiB(os.Getpid())
	if err != nil {
		return err
	}
	fmt.Printf("memory    after a collection, %d pods stored: live heap %d MiB (%.1f KiB per pod); RSS %.0f MiB, peak %s\n",
		stored, live>>20, float64(live)/1024/float64(max(stored, 1)), rss, benchapi.PeakRSS())
	return nil
}

// measure runs one create phase with n clients and prints it with what the server saw.
func (a *miniapi) measure(name string, n int, phase func([]*kubernetes.Clientset) (result, error)) (result, error) {
	clients, err := a.clients(n)
	if err != nil {
		return result{}, err
	}
	before, err := a.stats()
	if err != nil {
		return result{}, err
	}
	gcBefore := readGC()
	r, err := phase(clients)
	if err != nil {
		return result{}, err
	}
	after, err := a.stats()
	if err != nil {
		return result{}, err
	}
	fmt.Printf("create    %s: %s\n          %s\n          %s\n", name, r, after.since(before, r.elapsed), readGC().since(gcBefore, r.cpu))
	return r, nil
}

// benchList fills a namespace with pods and times LIST of it: raw HTTP (the server's work
// and the transfer) and client-go's typed List (adding the client's decoding).
func benchList(cfg config, api *miniapi) error {
	const ns = "bench-list"
	ctx := context.Background()
	clients, err := api.clients(64)
	if err != nil {
		return err
	}
	if err := benchapi.Namespace(context.Background(), clients[0], ns); err != nil {
		return err
	}
	start := time.Now()
	if err := fill(clients, ns, cfg.listPods); err != nil {
		return err
	}
	fmt.Printf("list      filled %d pods in %s\n", cfg.listPods, time.Since(start).Round(time.Millisecond))
	first, size, err := api.timeList(ns)
	if err != nil {
		return err
	}
	fmt.Printf("list      first raw LIST of %d pods (%.1f MiB): %s\n", cfg.listPods, float64(size)/(1<<20), first.Round(time.Millisecond))
	var rawTimes, typedTimes []time.Duration
	for range cfg.listRounds {
		d, _, err := api.timeList(ns)
		if err != nil {
			return err
		}
		rawTimes = append(rawTimes, d)
	}
	for range cfg.listRounds {
		start := time.Now()
		list, err := clients[0].CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != cfg.listPods {
			return fmt.Errorf("LIST returned %d pods, want %d", len(list.Items), cfg.listPods)
		}
		typedTimes = append(typedTimes, time.Since(start))
	}
	transfer, err := transferHTTPS(size, cfg.listRounds)
	if err != nil {
		return err
	}
	fmt.Printf("list      raw LIST of %d pods: %s\n", cfg.listPods, spread(rawTimes))
	fmt.Printf("baseline  HTTPS transfer of as many bytes from a static handler: %s\n", spread(transfer))
	fmt.Printf("ratio     raw LIST vs that transfer: %.1fx\n", float64(median(rawTimes))/float64(median(transfer)))

	// After a restart the watch cache holds every value but no decoded object yet: the first
	// LIST decodes and encodes each pod once (racing the control plane's own informers).
	if err := api.restart(); err != nil {
		return err
	}
	cold, _, err := api.timeList(ns)
	if err != nil {
		return err
	}
	warm, _, err := api.timeList(ns)
	if err != nil {
		return err
	}
	fmt.Printf("list      raw LIST of %d pods right after a restart: %s, then %s\n", cfg.listPods, cold.Round(time.Millisecond), warm.Round(time.Millisecond))
	fmt.Printf("list      client-go List of %d pods (with decoding): %s\n", cfg.listPods, spread(typedTimes))
	return nil
}

// gcPercent is the collector's GOGC setting.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// spread prints the median and the extremes of a few timings.
func spread(ds []time.Duration) string {
	slices.Sort(ds)
	return fmt.Sprintf("median %s (min %s, max %s, n=%d)", median(ds).Round(time.Millisecond),
		ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), len(ds))
}

func median(ds []time.Duration) time.Duration {
	sorted := slices.Sorted(slices.Values(ds))
	return sorted[len(sorted)/2]
}

// transferHTTPS times GETs of a size-byte body from a handler that only writes it: the
// transport's share of a LIST of that size.
func transferHTTPS(size, rounds int) ([]time.Duration, error) {
	body := bytes.Repeat([]byte("x"), size)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(body)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	var times []time.Duration
	for range rounds {
		start := time.Now()
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	return times, nil
}

// result is what a load phase measured.
type result struct {
	ops       int
	errors    int
	elapsed   time.Duration
	cpu       time.Duration   // CPU time of this process (clients and server) during the phase
	latencies []time.Duration // sorted
}

func (r result) perSecond() float64 { return float64(r.ops) / r.elapsed.Seconds() }

func (r result) cpuPerOp() time.Duration { return r.cpu / time.Duration(max(r.ops, 1)) }

func (r result) p(q int) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[min(len(r.latencies)-1, len(r.latencies)*q/100)]
}

func (r result) String() string {
	s := fmt.Sprintf("%7.0f/s  p50 %-8s p99 %-8s max %-8s (n=%d", r.perSecond(),
		r.p(50).Round(10*time.Microsecond), r.p(99).Round(10*time.Microsecond),
		r.p(100).Round(10*time.Microsecond), r.ops)
	if r.errors > 0 {
		s += fmt.Sprintf(", %d errors", r.errors)
	}
	if r.ops > 0 {
		s += fmt.Sprintf(", CPU %s/op, %.0f%% of %d cores", r.cpuPerOp().Round(time.Microsecond),
			100*r.cpu.Seconds()/r.elapsed.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU())
	}
	return s + ")"
}

// recorder collects latencies from concurrent workers.
type recorder struct {
	cpuStart  time.Duration
	mu        sync.Mutex
	latencies []time.Duration
	errors    int
	firstErr  error
}

func (rec *recorder) add(d time.Duration, err error) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err != nil {
		rec.errors++
		if rec.firstErr == nil {
			rec.firstErr = err
		}
		return
	}
	rec.latencies = append(rec.latencies, d)
}

func (rec *recorder) result(elapsed time.Duration) (result, error) {
	slices.Sort(rec.latencies)
	r := result{ops: len(rec.latencies), errors: rec.errors, elapsed: elapsed, cpu: cputime.Self() - rec.cpuStart, latencies: rec.latencies}
	if rec.errors > len(rec.latencies)/100 {
		return r, fmt.Errorf("%d of %d operations failed, first: %w", rec.errors, rec.errors+r.ops, rec.firstErr)
	}
	return r, nil
}

// backToBack runs op from each of workers goroutines, one call after another, for d, and
// records each call's latency; i numbers the calls across workers from 1.
func backToBack(workers int, d time.Duration, op func(worker int, i int64) error) (result, error) {
	rec := &recorder{cpuStart: cputime.Self()}
	var seq atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				t := time.Now()
				err := op(w, seq.Add(1))
				rec.add(time.Since(t), err)
			}
		})
	}
	wg.Wait()
	return rec.result(time.Since(start))
}

// closedLoop runs one worker per client, each creating pods back to back, for d.
func closedLoop(clients []*kubernetes.Clientset, tag string, d time.Duration) (result, error) {
	ns := "bench-" + tag
	if err := benchapi.Namespace(context.Background(), clients[0], ns); err != nil {
		return result{}, err
	}
	return backToBack(len(clients), d, func(w int, i int64) error { return createPod(clients[w], ns, i) })
}

// openLoop offers creates at a fixed rate whatever the latency, spread over the clients;
// latency counts from when a create was due, so queueing shows (no coordinated omission).
func openLoop(clients []*kubernetes.Clientset, tag string, rate int, d time.Duration) (result, error) {
	ns := "bench-" + tag
	if err := benchapi.Namespace(context.Background(), clients[0], ns); err != nil {
		return result{}, err
	}
	rec := &recorder{cpuStart: cputime.Self()}
	interval := time.Second / time.Duration(rate)
	total := int(d / interval)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range total {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		wg.Go(func() {
			err := createPod(clients[i%len(clients)], ns, int64(i))
			rec.add(time.Since(due), err)
		})
	}
	wg.Wait()
	return rec.result(time.Since(start))
}

// fill creates n pods in ns with all clients at once.
func fill(clients []*kubernetes.Clientset, ns string, n int) error {
	var next atomic.Int64
	errs := make(chan error, len(clients))
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := createPod(c, ns, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func createPod(c *kubernetes.Clientset, ns string, i int64) error {
	_, err := c.CoreV1().Pods(ns).Create(context.Background(), benchapi.Pod(ns, i), metav1.CreateOptions{})
	return err
}

// rawStoreCreates is the store's own create throughput with 64 writers and pod-sized values:
// the ceiling the API's creates are compared with.
func rawStoreCreates(open func(name string) (store.Interface, error), d time.Duration) (result, error) {
	s, err := open("raw")
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	value, err := benchPodJSON()
	if err != nil {
		return result{}, err
	}
	return backToBack(64, d, func(_ int, i int64) error {
		_, err := s.Create(context.Background(), fmt.Sprintf("/registry/core/pods/raw/pod-%d", i), value)
		return err
	})
}

// handlerCreates calls the API server's handler in-process, without TLS, client-go or the
// control plane's informers: the server's own share of a create.
func handlerCreates(open func(name string) (store.Interface, error), d time.Duration) (result, error) {
	engine, err := open("handler")
	if err != nil {
		return result{}, err
	}
	st, err := store.NewCache(engine, store.CacheOptions{})
	if err != nil {
		_ = engine.Close()
		return result{}, err
	}
	defer st.Close()
	reg, err := builtin.Registry()
	if err != nil {
		return result{}, err
	}
	srv := apiserver.New(apiserver.Config{Store: st, Registry: reg, Log: slog.New(slog.DiscardHandler)})
	if err := srv.Bootstrap(context.Background()); err != nil {
		return result{}, err
	}
	h := srv.Handler()
	return backToBack(64, d, func(_ int, i int64) error {
		body, err := json.Marshal(benchapi.Pod("default", i))
		if err != nil {
			return err
		}
		req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "apibench")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			return fmt.Errorf("create answered %d: %s", w.Code, w.Body)
		}
		return nil
	})
}

func benchPodJSON() ([]byte, error) {
	return json.Marshal(benchapi.Pod("raw", 1))
}

// trivialHTTPS is the round trip of an HTTPS handler that does nothing, over HTTP/2 like
// client-go, with 64 concurrent requesters: the transport's share of every API request.
func trivialHTTPS(d time.Duration) (result, error) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("{}"))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	hc := srv.Client()
	return backToBack(64, d, func(int, int64) error {
		resp, err := hc.Post(srv.URL, "application/json", strings.NewReader(`{"kind":"Pod"}`))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	})
}

// miniapi is a control plane running in this process.
type miniapi struct {
	dir, storeFlag string
	security       controlplane.Security
	url            string
	kubeconfig     string
	http           *http.Client // the admin's, without client-go
	stop           func()       // stops it; safe to call more than once
}

func startMiniapi(dir, storeFlag string, security controlplane.Security) (*miniapi, error) {
	api := &miniapi{dir: dir, storeFlag: storeFlag, security: security, kubeconfig: controlplane.AdminKubeconfig(dir)}
	return api, api.start()
}

// restart stops miniapi and starts it again on the same data dir, as a restart of the daemon.
func (a *miniapi) restart() error {
	a.stop()
	return a.start()
}

func (a *miniapi) start() error {
	port, err := freeport.One()
	if err != nil {
		return err
	}
	o := controlplane.Options{DataDir: a.dir, BindAddress: "127.0.0.1", SecurePort: port, Store: a.storeFlag,
		ServiceRange: clusterdefaults.ServiceCIDR, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// The benchmark's nodes post no heartbeats: they must not turn unreachable mid-run.
		Controllers: []string{"*", "-nodelifecycle"}, Security: a.security}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(ctx, o) }()
	var once sync.Once
	a.url, a.stop = o.ServerURL(), func() { once.Do(func() { cancel(); <-done }) }
	deadline := time.Now().Add(30 * time.Second)
	for {
		clients, err := a.clients(1)
		if err == nil {
			_, err = clients[0].CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		}
		if err == nil {
			a.http, err = a.httpClient()
			return err
		}
		select {
		case err := <-done:
			cancel()
			return fmt.Errorf("miniapi stopped: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			a.stop()
			return fmt.Errorf("miniapi did not come up: %w", err)
		}
	}
}

// timeList times a LIST of the pods of ns with a plain HTTP client, reading the whole body
// without decoding it, and returns the body's size.
func (a *miniapi) timeList(ns string) (time.Duration, int, error) {
	start := time.Now()
	resp, err := a.http.Get(a.url + "/api/v1/namespaces/" + ns + "/pods")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("LIST answered %s", resp.Status)
	}
	return time.Since(start), int(n), err
}

// printPodSize prints how big the benchmark's pod is once created: what the server adds to
// it (defaults, admission's service account volume, tolerations, priority; managedFields)
// is encoded, stored, cached, watched and decoded with it, so figures of servers that add
// different things are not of the same work.
func (a *miniapi) printPodSize() error {
	const ns = "bench-size"
	clients, err := a.clients(1)
	if err != nil {
		return err
	}
	if err := benchapi.Namespace(context.Background(), clients[0], ns); err != nil {
		return err
	}
	sent, err := json.Marshal(benchapi.Pod(ns, 0))
	if err != nil {
		return err
	}
	created, err := clients[0].CoreV1().Pods(ns).Create(context.Background(), benchapi.Pod(ns, 0), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	stored, err := json.Marshal(created)
	if err != nil {
		return err
	}
	managed, err := json.Marshal(created.ManagedFields)
	if err != nil {
		return err
	}
	fmt.Printf("pod       sent as %d bytes of JSON, created as %d (managedFields %d, %d volumes, %d tolerations)\n",
		len(sent), len(stored), len(managed), len(created.Spec.Volumes), len(created.Spec.Tolerations))
	return nil
}

// clients returns n clientsets, each with its own connection as separate programs would
// have (client-go shares one transport between identical configs), and no rate limit.
func (a *miniapi) clients(n int) ([]*kubernetes.Clientset, error) {
	return kubeclient.Clients(n, func() (*rest.Config, error) { return kubeclient.Unlimited(a.kubeconfig) })
}

// httpClient authenticates as the admin with a plain HTTP client.
func (a *miniapi) httpClient() (*http.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", a.kubeconfig)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true}}, nil
}

// serverStats are sums and counts from miniapi's /metrics that tell where a phase's time went.
type serverStats struct {
	createSum, createCount float64 // apiserver_request_duration_seconds of pod creates
	commitSum, commitCount float64 // minik8s_store_commit_duration_seconds (bolt only)
	batchSum               float64 // minik8s_store_commit_batch_writes
}

func (a *miniapi) stats() (serverStats, error) {
	resp, err := a.http.Get(a.url + "/metrics")
	if err != nil {
		return serverStats{}, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return serverStats{}, fmt.Errorf("read miniapi metrics: %w", err)
	}
	var st serverStats
	for _, m := range families["apiserver_request_duration_seconds"].GetMetric() {
		if benchapi.HasLabels(m, "verb", "create", "resource", "pods") {
			st.createSum, st.createCount = m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())
		}
	}
	for _, m := range families["minik8s_store_commit_duration_seconds"].GetMetric() {
		st.commitSum, st.commitCount = m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())
	}
	for _, m := range families["minik8s_store_commit_batch_writes"].GetMetric() {
		st.batchSum = m.GetHistogram().GetSampleSum()
	}
	return st, nil
}

// describe tells what the server saw between two scrapes spanning a phase of length d.
func (st serverStats) since(before serverStats, d time.Duration) string {
	creates := st.createCount - before.createCount
	out := fmt.Sprintf("server: mean create %s", meanDuration(st.createSum-before.createSum, creates))
	if commits := st.commitCount - before.commitCount; commits > 0 {
		busy := (st.commitSum - before.commitSum) / d.Seconds()
		out += fmt.Sprintf(", %.0f commits of %.1f writes, mean %s, committer busy %.0f%%",
			commits, (st.batchSum-before.batchSum)/commits, meanDuration(st.commitSum-before.commitSum, commits), 100*busy)
	}
	return out
}

// gcStats is what the Go collector of this process (miniapi and the clients) has done.
type gcStats struct {
	cycles   uint64
	markCPU  float64 // seconds of CPU spent marking: background workers and allocation assists
	liveHeap uint64  // bytes reachable at the end of the last cycle
}

func readGC() gcStats {
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"},
		{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}}
	metrics.Read(samples)
	st := gcStats{cycles: samples[0].Value.Uint64(), liveHeap: samples[1].Value.Uint64()}
	for _, m := range samples[2:] {
		st.markCPU += m.Value.Float64()
	}
	return st
}

// since says how much of a phase's CPU went to marking: with many objects cached, one
// collection takes long enough to queue the creates arriving meanwhile.
func (st gcStats) since(before gcStats, cpu time.Duration) string {
	mark := st.markCPU - before.markCPU
	rss, _ := proc.RSSMiB(os.Getpid())
	return fmt.Sprintf("Go GC: %d cycles, marking %.2fs CPU (%.0f%% of the phase's), live heap %d MiB; RSS %.0f MiB, peak %s",
		st.cycles-before.cycles, mark, 100*mark/max(cpu.Seconds(), 1e-9), st.liveHeap>>20, rss, benchapi.PeakRSS())
}

func meanDuration(sum, count float64) time.Duration {
	if count == 0 {
		return 0
	}
	return time.Duration(sum / count * float64(time.Second)).Round(10 * time.Microsecond)
}
