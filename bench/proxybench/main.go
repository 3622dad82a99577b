// Command proxybench measures miniproxy's iptables proxier at scale: N Services x 2
// endpoints synced into network namespaces the benchmark makes (never the host's tables).
// For each N it prints the full-sync time (into empty tables, and a resync into the full
// ones) and the size of the iptables-restore input; at the largest N the time to program
// one endpoint change (a partial sync) against a full sync, and in the same run the floors:
// the same rules restored raw into an empty namespace, a one-chain --noflush restore into the
// full table, and both again with iptables-legacy for comparison. Last, the real
// bin/miniproxy is run against an in-process miniapi holding the largest N, and its RSS
// (anonymous and file-backed) is read once it has synced, beside its floor: bin/informerfloor,
// client-go with miniproxy's two informers (holding proxy.Compact's records) and nothing else, against the same
// Services. (No kube-proxy here: the benchmark builds none.)
//
// It re-executes itself inside a namespace of its own (so the API server and miniproxy talk
// over that namespace's loopback) and removes every namespace it made.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/bench/internal/kubeclient"
	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/internal/cputime"
	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/proxy/iptables"
	"github.com/minik8s/minik8s/pkg/proxy/server"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const childEnv = "PROXYBENCH_ID" // set in the re-executed child: the run's id

// gogcs are the -gogc values, memoryLimits the -memory-limit ones; daemonOnly is -daemon-only,
// daemonChanges -daemon-changes.
var (
	gogcs         string
	memoryLimits  string
	floor         string
	daemonOnly    bool
	heapProfile   string
	daemonChanges int
)

func main() {
	sizes := flag.String("sizes", "1000,5000,10000", "numbers of Services (x 2 endpoints) to sync")
	changes := flag.Int("changes", 5, "one-endpoint changes to time at the largest size")
	miniproxy := flag.String("miniproxy", "bin/miniproxy", "miniproxy binary for the RSS figure, or several separated by commas, run in turn against the same Services (A/B); empty: skip")
	flag.BoolVar(&daemonOnly, "daemon-only", false, "only the daemon's figures (RSS, CPU) at the largest size")
	flag.IntVar(&daemonChanges, "daemon-changes", 50, "endpoint changes, back to back, after the daemon's three timed ones: its CPU per change and its RSS after them (0: none)")
	flag.StringVar(&heapProfile, "heap-profile", "", "write the daemon's heap profile at the largest size to this file")
	flag.StringVar(&gogcs, "gogc", "50,25", "GOGC values to run the daemon with too at the largest size, beside Go's default (empty: none)")
	flag.StringVar(&floor, "floor", "bin/informerfloor", "the client-go floor's binary (go build -o bin/ ./bench/proxybench/informerfloor), run at 10 and at the largest number of Services; empty: skip")
	flag.StringVar(&memoryLimits, "memory-limit", "", "--memory-limit values (GOMEMLIMIT) to run the daemon with too at the largest size, e.g. 32Mi,40Mi (empty: none)")
	flag.Parse()
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "proxybench: -sizes %q: %q is not a positive number\n", *sizes, f)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	sort.Ints(ns)
	var err error
	if id := os.Getenv(childEnv); id != "" {
		err = run(id, ns, *changes, *miniproxy)
	} else {
		err = reexec()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxybench:", err)
		os.Exit(1)
	}
}

// reexec runs this program again inside a fresh namespace and removes every namespace of
// the run afterwards, even when the child failed.
func reexec() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root: it makes network namespaces and iptables rules in them")
	}
	for _, tool := range []string{"ip", "iptables-restore", "iptables-save", "iptables-legacy-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (Debian packages iproute2, iptables)", tool)
		}
	}
	id := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	top := "mkpb-" + id
	defer sweep(top)
	if out, err := exec.Command("ip", "netns", "add", top).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add %s: %v: %s", top, err, out)
	}
	if out, err := exec.Command("ip", "-n", top, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("lo up in %s: %v: %s", top, err, out)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", top, self}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), childEnv+"="+id)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// sweep deletes the namespace top and every one named after it.
func sweep(top string) {
	names, _ := filepath.Glob("/run/netns/" + top + "*")
	for _, n := range names {
		_ = exec.Command("ip", "netns", "del", filepath.Base(n)).Run()
	}
}

func run(id string, sizes []int, changes int, miniproxy string) error {
	ctx := context.Background()
	ver, _ := exec.Command("iptables-restore", "--version").CombinedOutput()
	fmt.Printf("proxybench: %s; %d CPUs, load average %s\n", strings.TrimSpace(string(ver)), nproc(), benchapi.LoadAverage())
	fmt.Println("times are wall clock (the machine is shared) and, for iptables-restore, its own CPU time (user+sys)")
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	largest := sizes[len(sizes)-1]
	fmt.Println("CPU is the proxier's own (laying out, hashing, reading tables, GC) + iptables-restore's")
	fmt.Println("RSS is this process's after the resync and a collection: the listers' objects (what miniproxy's informers hold, untrimmed) and the proxier")
	fmt.Printf("\n%-8s %-9s %-11s %-36s %-36s %s\n", "services", "lines", "bytes", "full sync wall (CPU)", "resync into the full table (CPU)", "RSS")
	for _, n := range sizes {
		if daemonOnly {
			break
		}
		if err := syncSize(ctx, id, n, log, n == largest, changes); err != nil {
			return fmt.Errorf("%d services: %w", n, err)
		}
	}
	if miniproxy == "" {
		return nil
	}
	return daemonRSS(ctx, largest, strings.Split(miniproxy, ","))
}

// syncSize syncs n services into a fresh namespace with the proxier and prints the figures;
// at the largest size also the partial syncs and the floors.
func syncSize(ctx context.Context, id string, n int, log *slog.Logger, largest bool, changes int) error {
	ns, err := newNetns(fmt.Sprintf("mkpb-%s-n%d", id, n))
	if err != nil {
		return err
	}
	defer delNetns(ns)
	w := newWorld(n)
	p, err := iptables.New(iptables.Config{ClusterCIDR: clusterdefaults.ClusterCIDR}, w.services, w.slices, "node-1", log)
	if err != nil {
		return err
	}
	// selfCPU is the proxier's own CPU time in the last sync (this process does nothing
	// else meanwhile): with the restore's CPU, figures that the machine's load does not
	// inflate the way it inflates wall clock.
	var selfCPU time.Duration
	sync := func() (iptables.SyncResult, error) {
		var res iptables.SyncResult
		before := cputime.Self()
		err := network.InNetNS(ns, func() error {
			var err error
			res, err = p.Sync(ctx)
			return err
		})
		selfCPU = cputime.Self() - before
		return res, err
	}
	first, err := sync()
	if err != nil {
		return err
	}
	firstCPU := selfCPU
	p.ForceFull()
	again, err := sync()
	if err != nil {
		return err
	}
	debug.FreeOSMemory() // collects first
	rss, _ := rssOf(os.Getpid())
	fmt.Printf("%-8d %-9d %-11d %-36s %-36s %.1f MiB\n", n, first.RestoreLines, first.RestoreBytes,
		fmt.Sprintf("%v (%v + %v)", ms(first.Duration), ms(firstCPU), ms(first.RestoreCPU)),
		fmt.Sprintf("%v (%v + %v)", ms(again.Duration), ms(selfCPU), ms(again.RestoreCPU)), rss)
	if !largest {
		return nil
	}

	fmt.Printf("\none endpoint change at %d services (partial sync), %d times:\n", n, changes)
	change := func(i, gen int) (iptables.SyncResult, error) {
		p.Changed(w.setEndpoint(i, gen)) // what the informer's event tells miniproxy
		res, err := sync()
		if err == nil && res.Full {
			err = fmt.Errorf("change of service %d: the sync was a full one", i)
		}
		return res, err
	}
	for i := range changes {
		res, err := change(i*(n/max(changes, 1)), i+1)
		if err != nil {
			return err
		}
		fmt.Printf("  %v (CPU %v + %v; restore wall %v; %d chains, %d lines, %d bytes)\n", ms(res.Duration), ms(selfCPU),
			ms(res.RestoreCPU), ms(res.RestoreDuration), res.ChainsWritten, res.RestoreLines, res.RestoreBytes)
	}
	// The floor of a change: the very input the proxier wrote for one, captured, the change
	// undone, and the input restored again without the proxier.
	var input []byte
	err = capturingRestore(func() error {
		_, err := change(n-1, changes+1)
		return err
	}, &input)
	if err != nil {
		return err
	}
	if _, err := change(n-1, 0); err != nil {
		return err
	}
	floor, err := timeRestore(ns, input, "--noflush")
	if err != nil {
		return fmt.Errorf("restore of a change's input: %w", err)
	}
	fmt.Printf("  floor: the input of one such change (%d bytes) restored again without the proxier: %v\n", len(input), floor)
	p.ForceFull()
	full, err := sync()
	if err != nil {
		return err
	}
	fmt.Printf("  against a full sync of the same state: %v (CPU %v + %v)\n", ms(full.Duration), ms(selfCPU), ms(full.RestoreCPU))
	return floors(id, ns, n)
}

// floors restores what the proxier wrote, as iptables-save prints it, without the proxier:
// raw into an empty namespace (the cost of the rules themselves), and one chain with
// --noflush into the full table (the cost of touching a big table at all); then the same
// with iptables-legacy. What bounds each is told apart by two more figures per backend:
// a --noflush restore of nothing into the full table (starting the tool and whatever it
// reads of the table before it has anything to do), and iptables-save of the full nat
// table (reading all of it back). User and system CPU are printed apart: system is the
// kernel's share (netlink dumps and the commit for nft, the whole table blob copied and
// translated for legacy), user the tool's own (parsing, building and searching its cache).
func floors(id, full string, n int) error {
	var save bytes.Buffer
	for _, table := range []string{"filter", "nat"} {
		out, err := inNS(full, nil, "iptables-save", "-t", table)
		if err != nil {
			return err
		}
		save.Write(out)
	}
	lines := bytes.Count(save.Bytes(), []byte("\n"))
	one := oneChain(save.String())
	fmt.Printf("\nfloors at %d services (%d lines as iptables-save prints them); wall (CPU = user + sys):\n", n, lines)
	for _, backend := range []string{"iptables", "iptables-legacy"} {
		empty, err := newNetns(fmt.Sprintf("mkpb-%s-%s", id, backend))
		if err != nil {
			return err
		}
		figures, err := backendFloors(backend, empty, full, save.Bytes(), one)
		delNetns(empty)
		if err != nil {
			return err
		}
		fmt.Print(figures)
	}
	return nil
}

// backendFloors restores save raw into the empty namespace with backend's tools, then times
// the one-chain restore, an empty restore and a save against the full table (for nft the
// proxier's namespace, for legacy the one just filled).
func backendFloors(backend, empty, full string, save []byte, one string) (string, error) {
	raw, err := timeTool(empty, backend+"-restore", save, "-w", "5")
	if err != nil {
		return "", fmt.Errorf("%s raw: %w", backend, err)
	}
	target := full
	if backend != "iptables" {
		target = empty
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %s:\n    raw into an empty namespace          %s\n", backend, raw)
	for _, f := range []struct {
		what, tool string
		input      string
		args       []string
	}{
		{"one chain --noflush into the full table", backend + "-restore", one, []string{"-w", "5", "--noflush"}},
		{"nothing --noflush into the full table  ", backend + "-restore", "*nat\nCOMMIT\n", []string{"-w", "5", "--noflush"}},
		{"save of the full nat table             ", backend + "-save", "", []string{"-t", "nat"}},
	} {
		t, err := timeTool(target, f.tool, []byte(f.input), f.args...)
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", backend, f.what, err)
		}
		fmt.Fprintf(&b, "    %s %s\n", f.what, t)
	}
	return b.String(), nil
}

// restoreTime is a tool's wall clock and CPU time (user and system apart).
type restoreTime struct{ wall, user, sys time.Duration }

func (r restoreTime) String() string {
	return fmt.Sprintf("%v (CPU %v = %v + %v)", ms(r.wall), ms(r.user+r.sys), ms(r.user), ms(r.sys))
}

// timeRestore restores input with the host's iptables-restore (the proxier's backend).
func timeRestore(ns string, input []byte, args ...string) (restoreTime, error) {
	return timeTool(ns, "iptables-restore", input, append([]string{"-w", "5"}, args...)...)
}

func timeTool(ns, tool string, input []byte, args ...string) (restoreTime, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", filepath.Base(ns), tool}, args...)...)
	cmd.Stdin = bytes.NewReader(input)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return restoreTime{}, fmt.Errorf("%v: %s", err, out.Bytes())
	}
	return restoreTime{time.Since(start), cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()}, nil
}

// oneChain is a restore input rewriting the first KUBE-SVC chain of save with its rules.
func oneChain(save string) string {
	var chain string
	var rules []string
	for _, line := range strings.Split(save, "\n") {
		if chain == "" && strings.HasPrefix(line, ":KUBE-SVC-") {
			chain = strings.Fields(line[1:])[0]
		}
		if chain != "" && strings.HasPrefix(line, "-A "+chain+" ") {
			rules = append(rules, line)
		}
	}
	return "*nat\n:" + chain + " - [0:0]\n" + strings.Join(rules, "\n") + "\nCOMMIT\n"
}

// world is n services with 2 ready endpoints each, in listers the proxier reads.
type world struct {
	svcIdx, sliceIdx cache.Indexer
	services         corelisters.ServiceLister
	slices           discoverylisters.EndpointSliceLister
}

func newWorld(n int) *world {
	w := &world{
		svcIdx:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		sliceIdx: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
	}
	w.services, w.slices = corelisters.NewServiceLister(w.svcIdx), discoverylisters.NewEndpointSliceLister(w.sliceIdx)
	for i := range n {
		_ = w.svcIdx.Add(service(i, clusterIP(i)))
		_ = w.sliceIdx.Add(slice(i, 0))
	}
	return w
}

// setEndpoint gives service i the second endpoint of generation gen (0: the first one), as
// a rolling update would, and returns its new slice.
func (w *world) setEndpoint(i, gen int) *discoveryv1.EndpointSlice {
	s := slice(i, gen)
	_ = w.sliceIdx.Update(s)
	return s
}

// capturingRestore runs fn with iptables-restore behind a wrapper that keeps its input in
// *input.
func capturingRestore(fn func() error, input *[]byte) error {
	dir, err := os.MkdirTemp("", "proxybench-restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	real, err := exec.LookPath("iptables-restore")
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "input")
	script := "#!/bin/sh\ntee " + file + " | exec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "iptables-restore"), []byte(script), 0o755); err != nil {
		return err
	}
	path := os.Getenv("PATH")
	os.Setenv("PATH", dir+":"+path)
	err = fn()
	os.Setenv("PATH", path)
	if err != nil {
		return err
	}
	*input, err = os.ReadFile(file)
	return err
}

func clusterIP(i int) string { return fmt.Sprintf("10.96.%d.%d", i/250, i%250+1) }

// service is service i; ip "" lets the API server allocate the cluster IP.
func service(i int, ip string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d", i), Namespace: "bench"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if ip != "" {
		svc.Spec.ClusterIPs = []string{ip}
	}
	return svc
}

// slice is service i's EndpointSlice: two endpoints, the second one's address moved by gen.
func slice(i, gen int) *discoveryv1.EndpointSlice {
	ep := func(ip string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To("node-2"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d-abcde", i), Namespace: "bench",
			Labels: map[string]string{discoveryv1.LabelServiceName: fmt.Sprintf("svc-%05d", i), discoveryv1.LabelManagedBy: "proxybench"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{ep(fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)),
			ep(fmt.Sprintf("10.245.%d.%d", (i+gen*7)/250%256, (i+gen*7)%250+1))},
	}
}

// daemonRSS runs bin/miniproxy against an in-process miniapi holding n services and prints
// its RSS once its first sync wrote all of them, after endpoint changes, and at rest after
// them.
func daemonRSS(ctx context.Context, n int, binaries []string) error {
	if floor != "" {
		if _, err := os.Stat(floor); err != nil {
			return fmt.Errorf("-floor %s: %w (go build -o bin/ ./bench/proxybench/informerfloor, or -floor '' to skip)", floor, err)
		}
	}
	for _, b := range binaries {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("-miniproxy %s: %w (go build -o bin/ ./cmd/miniproxy, or -miniproxy '' to skip)", b, err)
		}
	}
	dir, err := os.MkdirTemp("", "proxybench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, err := freeport.One()
	if err != nil {
		return err
	}
	o := controlplane.Options{DataDir: dir, BindAddress: "127.0.0.1", SecurePort: port, Store: "bolt", ServiceRange: clusterdefaults.ServiceCIDR,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	apiCtx, stopAPI := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(apiCtx, o) }()
	defer func() { stopAPI(); <-done }()
	client, err := kubeclient.Wait(ctx, controlplane.AdminKubeconfig(dir), 30*time.Second)
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	create := func(from, to int) error {
		return benchapi.Parallel(32, to-from, func(i int) error {
			i += from
			if _, err := client.CoreV1().Services("bench").Create(ctx, service(i, ""), metav1.CreateOptions{}); err != nil {
				return err
			}
			_, err := client.DiscoveryV1().EndpointSlices("bench").Create(ctx, slice(i, 0), metav1.CreateOptions{})
			return err
		})
	}
	// Baseline: the same binary with 10 services (its floor: Go runtime, client-go, metrics).
	const few = 10
	if err := create(0, few); err != nil {
		return err
	}
	fmt.Printf("\nminiproxy daemon (RSS read after its first sync):\n")
	for _, b := range binaries {
		base, err := startMiniproxy(b, dir, few, nil)
		if err != nil {
			return err
		}
		mem := daemonMemory(base.cmd.Process.Pid)
		base.stop()
		fmt.Printf("  %s, baseline at %d services: %s\n", b, few, mem)
	}
	if err := floorMemory(dir, few); err != nil {
		return err
	}
	start := time.Now()
	if err := create(few, n); err != nil {
		return err
	}
	fmt.Printf("  (%d services and EndpointSlices created through the API in %v)\n", n, time.Since(start).Round(time.Second))
	if err := floorMemory(dir, n); err != nil {
		return err
	}
	gen := 0
	for _, b := range binaries {
		if err := daemonAt(ctx, client, b, dir, n, &gen); err != nil {
			return err
		}
	}
	return nil
}

// floorMemory runs the client-go floor (-floor) against the API in dir holding n Services
// and prints its memory once its informers have listed them.
func floorMemory(dir string, n int) error {
	if floor == "" {
		return nil
	}
	cmd := exec.Command(floor, controlplane.AdminKubeconfig(dir))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	line := make([]byte, len("synced\n"))
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "synced\n" {
		return fmt.Errorf("%s: no %q: %v\n%s", floor, "synced", err, logs.String())
	}
	fmt.Printf("  floor: client-go and miniproxy's two informers (proxy.Compact's records) alone (%s) at %d services: %s\n", floor, n, daemonMemory(cmd.Process.Pid))
	return nil
}

// daemonAt runs one miniproxy binary against the n Services: its first sync, endpoint
// changes, and again under each -gogc value.
func daemonAt(ctx context.Context, client *kubernetes.Clientset, miniproxy, dir string, n int, gen *int) error {
	mp, err := startMiniproxy(miniproxy, dir, n, nil)
	if err != nil {
		return err
	}
	defer mp.stop()
	m := mp.metrics
	// The daemon gives the full sync's garbage back (debug.FreeOSMemory) just after it
	// records the sync: its memory is read after that.
	time.Sleep(2 * time.Second)
	mem := daemonMemory(mp.cmd.Process.Pid)
	fmt.Printf("  %s at %d services: first sync done %v after start (its full sync %v, %v nat rules); its CPU until then %v; 2 s later %s\n",
		miniproxy, n, mp.synced.Round(time.Millisecond), ms(secs(m["kubeproxy_sync_full_proxy_rules_duration_seconds_sum"+v4])),
		m[natRules], ms(mp.cpu), mem)
	if m, err = scrape(mp.addr); err != nil {
		return err
	}
	fmt.Printf("  its Go heap then: %.1f MiB allocated (live and not yet collected), %.1f MiB in use by spans, %.1f MiB idle not returned to the OS\n",
		m["go_memstats_heap_alloc_bytes"]/(1<<20), m["go_memstats_heap_inuse_bytes"]/(1<<20),
		(m["go_memstats_heap_idle_bytes"]-m["go_memstats_heap_released_bytes"])/(1<<20))
	if err := endpointChanges(ctx, client, mp, n, gen); err != nil {
		return err
	}
	if heapProfile != "" {
		// What the live heap is made of (go tool pprof -top -inuse_space FILE).
		file := heapProfile + "." + filepath.Base(miniproxy)
		if err := fetch("http://"+mp.addr+"/debug/pprof/heap?gc=1", file); err != nil {
			return err
		}
		fmt.Printf("  its heap profile after the change (live objects): %s\n", file)
	}
	mp.stop()
	// The garbage collector's share: the same daemon and Services with a lower GOGC (a
	// smaller heap goal over the live heap, paid in collections), or a soft memory limit.
	var runs [][2]string // what it prints, the daemon's extra argument or environment
	for _, v := range strings.Split(gogcs, ",") {
		if v = strings.TrimSpace(v); v != "" {
			runs = append(runs, [2]string{"GOGC=" + v, "GOGC=" + v})
		}
	}
	for _, v := range strings.Split(memoryLimits, ",") {
		if v = strings.TrimSpace(v); v != "" {
			runs = append(runs, [2]string{"--memory-limit " + v, "--memory-limit=" + v})
		}
	}
	for _, r := range runs {
		var args, env []string
		if strings.HasPrefix(r[1], "--") {
			args = []string{r[1]}
		} else {
			env = []string{r[1]}
		}
		d, err := startMiniproxy(miniproxy, dir, n, args, env...)
		if err != nil {
			return err
		}
		time.Sleep(2 * time.Second) // as above
		fmt.Printf("  %s at %d services: first sync done %v after start; its CPU until then %v; 2 s later %s\n",
			r[0], n, d.synced.Round(time.Millisecond), ms(d.cpu), daemonMemory(d.cmd.Process.Pid))
		if err := endpointChanges(ctx, client, d, n, gen); err != nil {
			return err
		}
		d.stop()
	}
	return nil
}

// endpointChanges changes one Service's endpoints through the API a few times, each timed
// until the daemon has programmed it, with the daemon's own CPU for it and its RSS after;
// then -daemon-changes more, back to back.
func endpointChanges(ctx context.Context, client *kubernetes.Clientset, d *daemon, n int, gen *int) error {
	for range 3 {
		cpu := cpuOf(d.cmd.Process.Pid)
		changed := time.Now()
		m, m2, err := changeEndpoints(ctx, client, d, n, gen)
		if err != nil {
			return err
		}
		programmed := time.Since(changed)
		fmt.Printf("    one endpoint change: partial sync %v, update call to rules written %v, daemon CPU %v (10 ms ticks, restore apart); %s\n",
			ms(secs(m2["kubeproxy_sync_partial_proxy_rules_duration_seconds_sum"+v4]-m["kubeproxy_sync_partial_proxy_rules_duration_seconds_sum"+v4])),
			programmed.Round(time.Millisecond), cpuOf(d.cmd.Process.Pid)-cpu, daemonMemory(d.cmd.Process.Pid))
	}
	if daemonChanges > 0 {
		// The CPU per change out of many 10 ms ticks, and the RSS once the garbage of many
		// changes has met its collections (three changes make too little of it).
		// Its children: iptables-restore and iptables-save.
		own, children, _ := proc.SelfAndChildren(d.cmd.Process.Pid)
		for range daemonChanges {
			if _, _, err := changeEndpoints(ctx, client, d, n, gen); err != nil {
				return err
			}
		}
		own2, children2, _ := proc.SelfAndChildren(d.cmd.Process.Pid)
		fmt.Printf("    %d more changes: CPU per change, the daemon's own %v, its children's (iptables-restore) %v; then %s\n",
			daemonChanges, (own2-own)/time.Duration(daemonChanges), (children2-children)/time.Duration(daemonChanges), daemonMemory(d.cmd.Process.Pid))
	}
	return atRest(d)
}

// restMargin is how long past server.IdleReleaseWindow the resting RSS is read: the
// release (a collection and returning the pages) is done well within it.
const restMargin = 3 * time.Second

// atRest prints the daemon's RSS once it has been idle past its release window after the
// last change (a daemon without the idle release: what its heap keeps meanwhile), and its
// CPU and collections in that time (the release's cost, beside the idle daemon's own).
func atRest(d *daemon) error {
	pid := d.cmd.Process.Pid
	before, err := scrape(d.addr) // before the CPU is read: the scrape's own CPU is not counted
	if err != nil {
		return err
	}
	cpu := proc.RunTime(pid)
	time.Sleep(server.IdleReleaseWindow + restMargin)
	cpu = proc.RunTime(pid) - cpu
	mem := daemonMemory(pid)
	after, err := scrape(d.addr)
	if err != nil {
		return err
	}
	fmt.Printf("    at rest, %v after the last change: %s; its CPU meanwhile %v, %v collections; Go heap %.1f MiB allocated, %.1f in spans, %.1f idle not returned; stacks %.1f\n",
		server.IdleReleaseWindow+restMargin, mem, cpu.Round(time.Millisecond/10),
		after["go_gc_duration_seconds_count"]-before["go_gc_duration_seconds_count"], after["go_memstats_heap_alloc_bytes"]/(1<<20),
		after["go_memstats_heap_inuse_bytes"]/(1<<20), (after["go_memstats_heap_idle_bytes"]-after["go_memstats_heap_released_bytes"])/(1<<20),
		after["go_memstats_stack_inuse_bytes"]/(1<<20))
	return nil
}

// changeEndpoints gives the middle Service's slice new endpoints through the API and waits
// for the daemon's partial sync of it: its metrics before and after.
func changeEndpoints(ctx context.Context, client *kubernetes.Clientset, d *daemon, n int, gen *int) (before, after map[string]float64, err error) {
	*gen++
	if before, err = scrape(d.addr); err != nil {
		return nil, nil, err
	}
	s, err := client.DiscoveryV1().EndpointSlices("bench").Get(ctx, slice(n/2, 0).Name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	s.Endpoints = slice(n/2, *gen).Endpoints
	if _, err := client.DiscoveryV1().EndpointSlices("bench").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return nil, nil, err
	}
	after, err = waitMetrics(d.addr, time.Minute, func(m map[string]float64) bool {
		return m["kubeproxy_sync_partial_proxy_rules_duration_seconds_count"+v4] > before["kubeproxy_sync_partial_proxy_rules_duration_seconds_count"+v4]
	})
	return before, after, err
}

// The sync metrics' names as /metrics prints them: they carry kube-proxy's ip_family label.
const (
	v4       = `{ip_family="IPv4"}`
	natRules = `kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="nat"}`
)

// daemon is a running bin/miniproxy.
type daemon struct {
	cmd     *exec.Cmd
	addr    string // its /metrics
	logs    *bytes.Buffer
	synced  time.Duration      // start to first full sync
	cpu     time.Duration      // its user+system CPU until then (iptables-restore's apart)
	metrics map[string]float64 // right after it
}

// startMiniproxy runs miniproxy, with args beside the usual ones, against the API in dir
// until it has written n services.
func startMiniproxy(miniproxy, dir string, n int, args []string, env ...string) (*daemon, error) {
	port, err := freeport.One()
	if err != nil {
		return nil, err
	}
	d := &daemon{addr: fmt.Sprintf("127.0.0.1:%d", port), logs: &bytes.Buffer{}}
	d.cmd = exec.Command(miniproxy, "--kubeconfig", controlplane.AdminKubeconfig(dir), "--hostname-override", "node-1",
		"--cluster-cidr", clusterdefaults.ClusterCIDR, "--metrics-bind-address", d.addr, "--healthz-bind-address", "", "--min-sync-period", "100ms",
		"--profiling")
	d.cmd.Args = append(d.cmd.Args, args...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	d.cmd.Env = append(os.Environ(), env...)
	started := time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	d.metrics, err = waitMetrics(d.addr, 10*time.Minute, func(m map[string]float64) bool {
		return m[natRules] >= float64(n) // one rule per service at least
	})
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("%w\nminiproxy's log:\n%s", err, d.logs.String())
	}
	d.synced = time.Since(started)
	d.cpu = cpuOf(d.cmd.Process.Pid)
	return d, nil
}

func (d *daemon) stop() {
	if d.cmd.ProcessState != nil {
		return // stopped already
	}
	_ = d.cmd.Process.Signal(os.Interrupt)
	_ = d.cmd.Wait()
	_ = exec.Command(d.cmd.Path, "--cleanup").Run()
}

// daemonMemory is a daemon's RSS, its anonymous part (Go's heap, stacks and runtime) and
// file-backed part (the binary's pages), and its peak.
func daemonMemory(pid int) string {
	rss, hwm := rssOf(pid)
	anon, file, _ := proc.RSSParts(pid)
	return fmt.Sprintf("RSS %.1f MiB (anon %.1f, file %.1f), peak %.1f MiB", rss, anon, file, hwm)
}

func rssOf(pid int) (rss, hwm float64) {
	rss, _ = proc.RSSMiB(pid)
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			hwm = kb / 1024
		}
	}
	return rss, hwm
}

// waitMetrics scrapes /metrics until ok says yes.
func waitMetrics(addr string, timeout time.Duration, ok func(map[string]float64) bool) (map[string]float64, error) {
	deadline := time.Now().Add(timeout)
	for {
		m, err := scrape(addr)
		if err == nil && ok(m) {
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("miniproxy's metrics on %s did not get there in %v (last error: %v)", addr, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func scrape(addr string) (map[string]float64, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n"); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(strings.TrimSpace(line[i+1:]), 64); err == nil {
				m[line[:i]] = v
			}
		}
	}
	return m, nil
}

func newNetns(name string) (string, error) {
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("ip netns add %s: %v: %s", name, err, out)
	}
	return "/run/netns/" + name, nil
}

func delNetns(path string) { _ = exec.Command("ip", "netns", "del", filepath.Base(path)).Run() }

func inNS(ns string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", filepath.Base(ns)}, args...)...)
	cmd.Stdin = stdin
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond / 10) }

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// fetch GETs url into file.
func fetch(url, file string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuOf is process pid's user+system CPU time so far (/proc/PID/stat, in clock ticks of
// 10 ms).
func cpuOf(pid int) time.Duration {
	own, _ := proc.CPUTime(pid)
	return own
}

func nproc() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}
