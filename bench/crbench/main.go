// Command crbench measures creates of a custom resource, a Widget whose CRD has a 20-field
// structural schema and one CEL rule (x-kubernetes-validations) every create evaluates,
// on bin/miniapi (on bolt, and on etcd) and on kube-apiserver on etcd, in one run: the
// same client-go dynamic clients (one connection each, no client-side rate limit) at 1,
// 16 and 64 concurrent clients, creates/s, latency, the server's and etcd's CPU per
// create, and their RSS from /proc (peak and after the load). Each phase also says where a
// create's time went: the client's mean, the server's and its store's from the server's
// /metrics, the clients' CPU; after the servers, the floors of a 1-client create (floor.go).
// Before the load it checks that both refuse an object breaking the rule with the same
// 422. kube-apiserver is the one hack/kube-build.sh kube-apiserver builds. See
// docs/performance.md.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/bench/internal/apiproc"
	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/internal/cputime"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	"github.com/minik8s/minik8s/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

type config struct {
	miniapi, kubeAPI string
	sides            []string
	clients          []int
	creates          int
	cpuProfile       string
	profileSeconds   int
}

func main() {
	var cfg config
	var sides, clients string
	flag.StringVar(&cfg.miniapi, "miniapi", "bin/miniapi", "miniapi binary")
	flag.StringVar(&cfg.kubeAPI, "kube-apiserver", "", "kube-apiserver binary (hack/kube-build.sh kube-apiserver prints it); empty: miniapi only")
	flag.StringVar(&sides, "sides", "bolt,etcd,kube", "comma-separated servers to measure: bolt (miniapi on bolt), etcd (miniapi on etcd), kube (kube-apiserver on etcd)")
	flag.StringVar(&clients, "clients", "1,16,64", "comma-separated numbers of concurrent clients, one phase each")
	flag.IntVar(&cfg.creates, "creates", 3000, "creates per phase, shared by its clients")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the first miniapi during its last phase to this file (its /debug/pprof/profile)")
	flag.IntVar(&cfg.profileSeconds, "profile-seconds", 5, "length of that profile")
	flag.Parse()
	var err error
	if cfg.clients, err = parseInts(clients); err != nil {
		fmt.Fprintln(os.Stderr, "crbench: -clients:", err)
		os.Exit(2)
	}
	cfg.sides = strings.Split(sides, ",")
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "crbench:", err)
		os.Exit(1)
	}
}

// parseInts reads "1,16,64".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// side is one kind of server under test.
type side struct {
	name string
	etcd bool // on an etcd of its own (one member, TLS)
	args func(etcd *etcdtest.Cluster, saKey string) apiproc.Args
}

// phase is one load level's results.
type phase struct {
	clients int
	benchapi.Latencies
	serverCPU, etcdCPU time.Duration // per create
	clientCPU          time.Duration // per create, this process's: the clients'
	// The server's own means from its /metrics: a create's handling (from its
	// request-duration histogram) and its store's write (miniapi's bolt commit,
	// kube-apiserver's etcd create); 0 when the server has no such histogram.
	serverMean, storeMean time.Duration
}

// figures are one side's results.
type figures struct {
	name                  string
	etcd                  bool
	phases                []phase
	refused               string // the answer to the object breaking the CEL rule
	peakServer, rssServer float64
	peakEtcd, rssEtcd     float64
	answer                *unstructured.Unstructured // the server's answer to the first create
}

func run(cfg config) error {
	work, err := os.MkdirTemp("", "crbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fmt.Printf("# crbench: %d creates of a %s (20-field schema, CEL rule %q) per phase at %v clients; %d CPUs; load average %s\n",
		cfg.creates, kind, celRule, cfg.clients, runtime.NumCPU(), benchapi.LoadAverage())
	caDir := filepath.Join(work, "pki")
	ca, saKey, err := apiproc.EnsurePKI(caDir)
	if err != nil {
		return err
	}
	all := map[string]side{
		"bolt": {name: "miniapi (bolt)", args: func(_ *etcdtest.Cluster, saKey string) apiproc.Args {
			return apiproc.MiniapiArgs(cfg.miniapi, nil, saKey)
		}},
		"etcd": {name: "miniapi (etcd)", etcd: true, args: func(etcd *etcdtest.Cluster, saKey string) apiproc.Args {
			return apiproc.MiniapiArgs(cfg.miniapi, etcd, saKey)
		}},
		"kube": {name: "kube-apiserver (etcd)", etcd: true, args: func(etcd *etcdtest.Cluster, saKey string) apiproc.Args {
			return apiproc.KubeAPIServerArgs(cfg.kubeAPI, etcd, "/registry", saKey)
		}},
	}
	var results []figures
	profiled := cfg.cpuProfile == ""
	for _, key := range cfg.sides {
		s, ok := all[key]
		if !ok {
			return fmt.Errorf("unknown side %q (bolt, etcd or kube)", key)
		}
		if key == "kube" && cfg.kubeAPI == "" {
			fmt.Println("\n# kube-apiserver: not measured (no -kube-apiserver)")
			continue
		}
		profile := ""
		if !profiled && key != "kube" {
			profile, profiled = cfg.cpuProfile, true
		}
		fmt.Printf("\n## %s\n", s.name)
		f, err := measure(cfg, ca, caDir, saKey, filepath.Join(work, key), s, profile)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		results = append(results, f)
	}
	printTable(cfg, results)
	if slices.Contains(cfg.clients, 1) && len(results) > 0 {
		fs, err := floors(work, results[0].answer, cfg.creates)
		if err != nil {
			return err
		}
		fmt.Printf("\n# floors of a 1-client create, %d back to back on this machine and disk:\n", cfg.creates)
		for _, f := range fs {
			fmt.Println(f)
		}
	}
	fmt.Printf("\n# load average at the end: %s\n", benchapi.LoadAverage())
	return nil
}

// measure starts a side's etcd and server, runs the phases and stops them.
func measure(cfg config, ca *pki.CA, caDir, saKey, dir string, s side, profile string) (figures, error) {
	f := figures{name: s.name, etcd: s.etcd}
	var etcd *etcdtest.Cluster
	etcdPID := 0
	if s.etcd {
		var err error
		if etcd, err = etcdtest.StartCluster(filepath.Join(dir, "etcd"), etcdtest.Options{TLS: true}); err != nil {
			return f, err
		}
		defer etcd.Stop()
		etcdPID = etcd.Members[0].PID()
	}
	srv, err := apiproc.Start(ca, caDir, filepath.Join(dir, "server"), s.name, s.args(etcd, saKey))
	if err != nil {
		return f, err
	}
	defer srv.Stop()
	start := time.Now()
	if err := srv.WaitReady(2 * time.Minute); err != nil {
		return f, err
	}
	fmt.Printf("ready     in %s\n", time.Since(start).Round(10*time.Millisecond))
	const ns = "crbench"
	if f.answer, err = setup(srv, ns); err != nil {
		return f, err
	}
	if f.refused, err = refuseInvalid(srv, ns); err != nil {
		return f, err
	}
	fmt.Printf("invalid   %s\n", f.refused)
	for i, n := range cfg.clients {
		var profiling chan error
		if profile != "" && i == len(cfg.clients)-1 {
			profiling = make(chan error, 1)
			go func() { profiling <- cpuProfile(srv, profile, cfg.profileSeconds) }()
		}
		p, err := load(srv, ns, n, cfg.creates, srv.PID(), etcdPID)
		if err != nil {
			return f, err
		}
		fmt.Printf("create    %2d clients: %6.0f/s, p50 %s, p99 %s; mean: client %s, server %s, store %s; CPU per create: server %s, etcd %s, client %s (n=%d)\n",
			n, p.PerSecond(), p.P(50), p.P(99), mean(p.Each), orDash(p.serverMean), orDash(p.storeMean),
			p.serverCPU.Round(time.Microsecond), p.etcdCPU.Round(time.Microsecond), p.clientCPU.Round(time.Microsecond), len(p.Each))
		f.phases = append(f.phases, p)
		if profiling != nil {
			if err := <-profiling; err != nil {
				return f, fmt.Errorf("CPU profile: %w", err)
			}
			fmt.Printf("profile   %ds of the server during that phase: %s\n", cfg.profileSeconds, profile)
		}
	}
	if f.peakServer, f.rssServer, err = rss(srv.PID()); err != nil {
		return f, err
	}
	if etcdPID != 0 {
		if f.peakEtcd, f.rssEtcd, err = rss(etcdPID); err != nil {
			return f, err
		}
	}
	fmt.Printf("memory    server peak %.0f MiB, after %.0f MiB; etcd peak %.0f MiB, after %.0f MiB\n", f.peakServer, f.rssServer, f.peakEtcd, f.rssEtcd)
	return f, nil
}

// rss is a process's peak (VmHWM) and current (VmRSS) resident set.
func rss(pid int) (peak, now float64, err error) {
	if peak, err = proc.PeakRSSMiB(pid); err != nil {
		return 0, 0, err
	}
	now, err = proc.RSSMiB(pid)
	return peak, now, err
}

// setup creates the namespace and the CRD and waits until the server creates a Widget
// (the CRD Established and its resource served); it returns the server's answer.
func setup(srv *apiproc.Server, ns string) (*unstructured.Unstructured, error) {
	cfg, err := srv.Config()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var answer *unstructured.Unstructured
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		answer, last = dyn.Resource(widgets).Namespace(ns).Create(ctx, widget(ns, "warm", 0), metav1.CreateOptions{})
		return last == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no Widget created within a minute: %w", cmp.Or(last, err))
	}
	return answer, nil
}

// refuseInvalid creates a Widget breaking the CEL rule and returns the refusal; any other
// answer than 422 Invalid with the rule's message is an error: the servers would not be
// doing the same work.
func refuseInvalid(srv *apiproc.Server, ns string) (string, error) {
	cfg, err := srv.Config()
	if err != nil {
		return "", err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	_, err = dyn.Resource(widgets).Namespace(ns).Create(context.Background(), invalidWidget(ns), metav1.CreateOptions{})
	return refusal(err)
}

// refusal checks the answer to the invalid Widget.
func refusal(err error) (string, error) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return "", fmt.Errorf("the Widget breaking %q was not refused with a status: %v", celRule, err)
	}
	s := status.Status()
	if s.Code != http.StatusUnprocessableEntity || s.Reason != metav1.StatusReasonInvalid || !strings.Contains(s.Message, celError) {
		return "", fmt.Errorf("the Widget breaking %q: want 422 Invalid with %q, got %d %s: %s", celRule, celError, s.Code, s.Reason, s.Message)
	}
	return fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message), nil
}

// load runs n closed-loop clients, each on a dynamic client of its own, creating creates/n
// Widgets each, and takes the server's and etcd's CPU time over the phase.
func load(srv *apiproc.Server, ns string, n, creates, serverPID, etcdPID int) (phase, error) {
	p := phase{clients: n}
	var clients []dynamic.ResourceInterface
	for range n {
		cfg, err := srv.Config()
		if err != nil {
			return p, err
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return p, err
		}
		clients = append(clients, dyn.Resource(widgets).Namespace(ns))
	}
	admin, err := srv.Config()
	if err != nil {
		return p, err
	}
	metricsClient, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return p, err
	}
	before, err := benchapi.ScrapeMetrics(context.Background(), metricsClient.RESTClient())
	if err != nil {
		return p, err
	}
	server0, err := proc.CPUTime(serverPID)
	if err != nil {
		return p, err
	}
	etcd0, client0 := cpuTime(etcdPID), cputime.Self()
	each := max(creates/n, 1)
	p.Latencies, err = benchapi.ClosedLoop(clients, func(i int) bool { return i < each }, func(c dynamic.ResourceInterface, w, i int) error {
		_, err := c.Create(context.Background(), widget(ns, fmt.Sprintf("c%d-%d-%d", n, w, i), int64(i)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return p, err
	}
	server1, err := proc.CPUTime(serverPID)
	if err != nil {
		return p, err
	}
	done := time.Duration(len(p.Each))
	p.serverCPU, p.etcdCPU, p.clientCPU = (server1-server0)/done, (cpuTime(etcdPID)-etcd0)/done, (cputime.Self()-client0)/done
	after, err := benchapi.ScrapeMetrics(context.Background(), metricsClient.RESTClient())
	if err != nil {
		return p, err
	}
	p.serverMean, p.storeMean = serverTimes(before, after)
	return p, nil
}

// serverTimes are the mean Widget create and mean store write between two scrapes of a
// server's /metrics: miniapi's request verb is "create", kube-apiserver's "POST"; miniapi
// on bolt times its commits, kube-apiserver its etcd requests.
func serverTimes(before, after benchapi.Metrics) (request, store time.Duration) {
	// mean is the mean of the histograms named by series (each a name, then label pairs)
	// between the two scrapes; 0 when they saw no sample.
	mean := func(series ...[]string) time.Duration {
		var sum, n float64
		for _, s := range series {
			s0, n0 := before.Histogram(s[0], s[1:]...)
			s1, n1 := after.Histogram(s[0], s[1:]...)
			sum, n = sum+s1-s0, n+n1-n0
		}
		if n == 0 {
			return 0
		}
		return time.Duration(sum / n * float64(time.Second)).Round(time.Microsecond)
	}
	request = mean([]string{"apiserver_request_duration_seconds", "verb", "create", "resource", plural},
		[]string{"apiserver_request_duration_seconds", "verb", "POST", "resource", plural})
	store = mean([]string{"minik8s_store_commit_duration_seconds"},
		[]string{"etcd_request_duration_seconds", "operation", "create"})
	return request, store
}

// orDash is d, or "-" for 0: a mean the server's /metrics did not give.
func orDash(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}

// cpuTime is a process's CPU time, 0 for no process.
func cpuTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	t, _ := proc.CPUTime(pid)
	return t
}

// cpuProfile writes the server's CPU profile over seconds (miniapi serves
// /debug/pprof/ to cluster-admin).
func cpuProfile(srv *apiproc.Server, file string, seconds int) error {
	cfg, err := srv.Config()
	if err != nil {
		return err
	}
	cfg.Timeout = time.Duration(seconds+30) * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	data, err := c.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).DoRaw(context.Background())
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

func printTable(cfg config, all []figures) {
	if len(all) == 0 {
		return
	}
	fmt.Printf("\n%-36s", "")
	for _, f := range all {
		fmt.Printf(" %-24s", f.name)
	}
	row := func(label string, cell func(f figures) string) {
		fmt.Printf("\n%-36s", label)
		for _, f := range all {
			fmt.Printf(" %-24s", cell(f))
		}
	}
	for i, n := range cfg.clients {
		row(fmt.Sprintf("creates/s, %d clients", n), func(f figures) string { return fmt.Sprintf("%.0f", f.phases[i].PerSecond()) })
		row("  p50 / p99", func(f figures) string {
			return fmt.Sprintf("%s / %s", f.phases[i].P(50), f.phases[i].P(99))
		})
		row("  CPU per create, server + etcd", func(f figures) string {
			return fmt.Sprintf("%s + %s", f.phases[i].serverCPU.Round(time.Microsecond), f.phases[i].etcdCPU.Round(time.Microsecond))
		})
		row("  CPU per create, client", func(f figures) string { return f.phases[i].clientCPU.Round(time.Microsecond).String() })
		row("  mean: client / server / store", func(f figures) string {
			return fmt.Sprintf("%s / %s / %s", mean(f.phases[i].Each), orDash(f.phases[i].serverMean), orDash(f.phases[i].storeMean))
		})
	}
	row("RSS server, MiB: peak / after", func(f figures) string { return fmt.Sprintf("%.0f / %.0f", f.peakServer, f.rssServer) })
	row("RSS etcd, MiB: peak / after", func(f figures) string {
		if !f.etcd {
			return "-"
		}
		return fmt.Sprintf("%.0f / %.0f", f.peakEtcd, f.rssEtcd)
	})
	fmt.Println()
	kube := all[len(all)-1]
	if !strings.HasPrefix(kube.name, "kube-apiserver") {
		return
	}
	for _, f := range all[:len(all)-1] {
		var ratios []string
		for i, n := range cfg.clients {
			ratios = append(ratios, fmt.Sprintf("%.2fx at %d", f.phases[i].PerSecond()/kube.phases[i].PerSecond(), n))
		}
		fmt.Printf("ratio     %s creates/s vs kube-apiserver's: %s\n", f.name, strings.Join(ratios, ", "))
		same := "the same"
		if f.refused != kube.refused {
			same = "different: " + f.refused
		}
		fmt.Printf("invalid   %s refused the Widget breaking the rule as kube-apiserver did: %s\n", f.name, same)
	}
}
