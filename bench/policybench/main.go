// Command policybench measures our NetworkPolicy enforcement (pkg/network/policy, run as
// bin/policyd: minilet's controller in a process of its own) beside kube-router's network
// policy controller, in one run against one in-process miniapi (bolt) holding N policies
// over M pods of the benchmark node (API objects only: status.podIP and status.hostIP set,
// no containers). Each controller runs in a network namespace of its own (iptables and
// ipsets are per namespace) and reaches the API through a forwarder listening on that
// namespace's loopback. For each it prints:
//   - full sync: from the process's start until it logs a finished sync after which
//     iptables-save in its namespace shows the complete ruleset (every pod chain);
//   - label change: from the pod update's acknowledgement until `ipset test` in its
//     namespace finds the pod in the set of the one rule whose peer selector now selects
//     it (and, changed back, no longer finds it);
//   - RSS after the full sync and peak RSS (VmHWM), read the same way for both;
//   - the floor: ipset restore + iptables-restore of its final ruleset alone into an empty
//     namespace.
//
// Every namespace, process, rule and set it made goes away with it, even on failure.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/bench/internal/kubeclient"
	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/network"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	nPods := flag.Int("pods", 5000, "pods on the benchmark node")
	nPolicies := flag.Int("policies", 1000, "NetworkPolicies")
	nNamespaces := flag.Int("namespaces", 50, "namespaces the pods and policies spread over")
	changes := flag.Int("changes", 3, "label changes to time per controller (each one added, then removed)")
	policyd := flag.String("policyd", "bin/policyd", "our controller's binary (go build -o bin/ ./bench/policybench/policyd)")
	kubeRouter := flag.String("kube-router", "", "kube-router binary (hack/kube-router-build.sh prints its path); empty: ours only")
	timeout := flag.Duration("sync-timeout", 15*time.Minute, "longest wait for one controller's full sync")
	changeTimeout := flag.Duration("change-timeout", 15*time.Minute,
		"longest wait for one label change; past it the change is reported as not enforced, the window a lower bound")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{changes: *changes, syncTimeout: *timeout, changeTimeout: *changeTimeout, id: strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}
	err := b.run(ctx, newWorkload(*nNamespaces, *nPods, *nPolicies), *policyd, *kubeRouter)
	b.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "policybench:", err)
		os.Exit(1)
	}
}

type bench struct {
	id            string
	changes       int
	syncTimeout   time.Duration
	changeTimeout time.Duration
	client        *kubernetes.Clientset
	apiAddr       string
	kubeconfig    clientcmdFile
	w             *workload

	mu       sync.Mutex
	netnses  []string
	procs    []*exec.Cmd
	stopping []func()
}

type clientcmdFile struct{ dir, admin string }

// controller is one of the two under test: how to start it in a namespace, what its
// completed-sync log line looks like and how many of its pod chains a complete ruleset has.
type controller struct {
	name       string
	args       func(kubeconfig string) []string
	syncLine   *regexp.Regexp // a finished sync; group 1: its duration as the controller logs it
	chainRe    *regexp.Regexp // a pod chain's declaration in iptables-save
	wantChains int
}

func (b *bench) run(ctx context.Context, w *workload, policyd, kubeRouter string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root: it makes network namespaces and iptables rules in them")
	}
	for _, tool := range []string{"ip", "iptables-save", "iptables-restore", "ipset"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (Debian packages iproute2, iptables, ipset)", tool)
		}
	}
	if _, err := os.Stat(policyd); err != nil {
		return fmt.Errorf("-policyd %s: %w (go build -o bin/ ./bench/policybench/policyd)", policyd, err)
	}
	b.w = w
	ours, krChains := w.expected()
	ctrls := []controller{{
		name: "minik8s (bin/policyd)",
		args: func(kc string) []string {
			return []string{policyd, "--kubeconfig", kc, "--hostname-override", nodeName}
		},
		syncLine:   regexp.MustCompile(`msg="network policy sync".* took=(\S+)`),
		chainRe:    regexp.MustCompile(`(?m)^:MKNP-[IE]-`),
		wantChains: ours,
	}}
	if kubeRouter != "" {
		ctrls = append(ctrls, controller{
			name: "kube-router " + version(kubeRouter),
			args: func(kc string) []string {
				return []string{kubeRouter, "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
					"--kubeconfig", kc, "--hostname-override", nodeName, "--v=1"}
			},
			syncLine:   regexp.MustCompile(`sync iptables took (\S+)`),
			chainRe:    regexp.MustCompile(`(?m)^:KUBE-POD-FW-`),
			wantChains: krChains,
		})
	}
	ver, _ := exec.Command("iptables-restore", "--version").CombinedOutput()
	fmt.Printf("policybench: %d NetworkPolicies over %d pods in %d namespaces, all on one node; %s; %d CPUs, load average %s\n",
		len(w.policies), len(w.pods), len(w.namespaces), strings.TrimSpace(string(ver)), nproc(), benchapi.LoadAverage())
	if err := b.startAPI(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := b.createWorkload(ctx); err != nil {
		return err
	}
	fmt.Printf("(objects created through the API in %v)\n", time.Since(start).Round(time.Second))
	type result struct {
		name                    string
		sync, selfSync          time.Duration
		added, removed          []time.Duration
		late                    *notEnforced // the label change it did not enforce within the window
		rss, peak               float64
		floor                   floor
		chains, rules, setLines int
	}
	var results []result
	for _, c := range ctrls {
		r := result{name: c.name}
		ns, err := b.netns(strings.Fields(c.name)[0])
		if err != nil {
			return err
		}
		d, err := b.startController(ctx, ns, c)
		if err != nil {
			return err
		}
		if r.sync, r.selfSync, err = d.waitFullSync(ctx, ns, c, b.syncTimeout); err != nil {
			d.stop()
			return fmt.Errorf("%s: %w\n%s", c.name, err, d.tail())
		}
		r.rss, _ = proc.RSSMiB(d.pid())
		save, sets, err := b.ruleset(ns)
		if err != nil {
			d.stop()
			return err
		}
		r.chains, r.rules, r.setLines = count(save, "\n:"), count(save, "\n-A "), count(sets, "\nadd ")
		r.added, r.removed, err = b.labelChanges(ctx, ns, sets)
		switch {
		case errors.As(err, &r.late):
			fmt.Printf("%s: %v; its last lines:\n%s\n", c.name, err, d.tail())
		case err != nil:
			d.stop()
			return fmt.Errorf("%s: %w\n%s", c.name, err, d.tail())
		}
		r.peak, _ = proc.PeakRSSMiB(d.pid())
		d.stop()
		if r.floor, err = b.floor(save, sets); err != nil {
			return err
		}
		results = append(results, r)
	}
	fmt.Printf("\n%-24s %-26s %-22s %-22s %-10s %-10s %-9s %-9s %s\n", "controller", "full sync (own figure)", "label added p50/max", "label removed p50/max", "RSS", "peak RSS", "chains", "rules", "set entries")
	for _, r := range results {
		fmt.Printf("%-24s %-26s %-22s %-22s %-10s %-10s %-9d %-9d %d\n", r.name,
			fmt.Sprintf("%v (%v)", r.sync.Round(time.Millisecond), r.selfSync.Round(time.Millisecond)),
			changeFigure(r.added, r.late, true), changeFigure(r.removed, r.late, false), fmt.Sprintf("%.1f MiB", r.rss), fmt.Sprintf("%.1f MiB", r.peak), r.chains, r.rules, r.setLines)
	}
	fmt.Printf("\nfloor: the final ruleset alone restored into an empty namespace (ipset restore + iptables-restore, wall)\n")
	for _, r := range results {
		fmt.Printf("  %-24s %v + %v = %v\n", r.name, r.floor.sets.Round(time.Millisecond), r.floor.rules.Round(time.Millisecond), (r.floor.sets + r.floor.rules).Round(time.Millisecond))
	}
	if len(results) == 2 {
		o, k := results[0], results[1]
		fmt.Printf("\nkube-router / ours: full sync %.1fx, label added %s, label removed %s, peak RSS %.1fx\n",
			ratio(k.sync, o.sync), changeRatio(k.added, k.late, true, o.added), changeRatio(k.removed, k.late, false, o.removed), k.peak/o.peak)
	}
	return nil
}

// startAPI runs miniapi on bolt in a temporary directory on the host's loopback.
func (b *bench) startAPI(ctx context.Context) error {
	controlplane.TuneRuntime(context.Background(), controlplane.DefaultMemoryLimit)
	dir, err := os.MkdirTemp("", "policybench-")
	if err != nil {
		return err
	}
	b.onCleanup(func() { os.RemoveAll(dir) })
	port, err := freeport.One()
	if err != nil {
		return err
	}
	// No node lifecycle controller: the benchmark's node posts no heartbeats.
	o := controlplane.Options{DataDir: dir, BindAddress: "127.0.0.1", SecurePort: port, Store: "bolt", ServiceRange: clusterdefaults.ServiceCIDR,
		Controllers: []string{"*", "-nodelifecycle"}, ClusterCIDR: clusterdefaults.ClusterCIDR,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	apiCtx, stopAPI := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(apiCtx, o) }()
	b.onCleanup(func() { stopAPI(); <-done })
	b.apiAddr = fmt.Sprintf("127.0.0.1:%d", port)
	b.kubeconfig = clientcmdFile{dir: dir, admin: controlplane.AdminKubeconfig(dir)}
	b.client, err = kubeclient.Wait(ctx, b.kubeconfig.admin, 60*time.Second)
	return err
}

// createWorkload writes the node, namespaces, pods (then their status, which a create
// resets) and policies.
func (b *bench) createWorkload(ctx context.Context) error {
	c := b.client.CoreV1()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"kubernetes.io/hostname": nodeName}}}
	n, err := c.Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}, {Type: corev1.NodeHostName, Address: nodeName}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if _, err := c.Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return err
	}
	for _, ns := range b.w.namespaces {
		if _, err := c.Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, ns := range b.w.namespaces { // pods are admitted once their namespace has its ServiceAccount
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		}); err != nil {
			return fmt.Errorf("namespace %s has no default ServiceAccount: %w", ns.Name, err)
		}
	}
	if err := benchapi.Parallel(32, len(b.w.pods), func(i int) error {
		p := b.w.pods[i]
		created, err := c.Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = p.Status
		_, err = c.Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("pods: %w", err)
	}
	return benchapi.Parallel(32, len(b.w.policies), func(i int) error {
		np := b.w.policies[i]
		_, err := b.client.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{})
		return err
	})
}

// netns makes an empty namespace with loopback up.
func (b *bench) netns(name string) (string, error) {
	name = "mkpolb-" + b.id + "-" + strings.ToLower(strings.TrimSuffix(name, ":"))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("ip netns add %s: %v: %s", name, err, out)
	}
	b.mu.Lock()
	b.netnses = append(b.netnses, name)
	b.mu.Unlock()
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return "", fmt.Errorf("lo up in %s: %v: %s", name, err, out)
	}
	return name, nil
}

// forward listens on ns's loopback and connects each connection to the API server from
// the host's loopback: the controller reaches the API with no route out of its namespace.
func (b *bench) forward(ns string) (string, error) {
	var l net.Listener
	if err := network.InNetNS("/run/netns/"+ns, func() error {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		return "", fmt.Errorf("listen in %s: %w", ns, err)
	}
	b.onCleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", b.apiAddr)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return l.Addr().String(), nil
}

// daemon is a controller's process and its log.
type daemon struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	log   []string
	syncs chan string // the duration of every finished sync, as logged
}

func (b *bench) startController(ctx context.Context, ns string, c controller) (*daemon, error) {
	addr, err := b.forward(ns)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.LoadFromFile(b.kubeconfig.admin)
	if err != nil {
		return nil, err
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + addr
	}
	kc := filepath.Join(b.kubeconfig.dir, ns+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		return nil, err
	}
	d := &daemon{syncs: make(chan string, 1000)}
	d.cmd = exec.Command("ip", append([]string{"netns", "exec", ns}, c.args(kc)...)...)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	d.cmd.Stdout = d.cmd.Stderr
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.procs = append(b.procs, d.cmd)
	b.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			d.log = append(d.log, line)
			d.mu.Unlock()
			if m := c.syncLine.FindStringSubmatch(line); m != nil {
				d.syncs <- m[1]
			}
		}
	}()
	return d, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid } // ip netns exec execs the controller

// tail is the last lines the controller logged, for an error.
func (d *daemon) tail() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.log[max(0, len(d.log)-20):], "\n")
}

func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
	}
}

// waitFullSync waits for the first logged sync after which ns holds every pod chain c
// writes, and returns the time since the process started and the sync's own duration.
func (d *daemon) waitFullSync(ctx context.Context, ns string, c controller, timeout time.Duration) (time.Duration, time.Duration, error) {
	start := time.Now() // the process started just before
	deadline := time.After(timeout)
	for {
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-deadline:
			return 0, 0, fmt.Errorf("no complete sync within %v", timeout)
		case took := <-d.syncs:
			at := time.Since(start)
			out, err := exec.Command("ip", "netns", "exec", ns, "iptables-save", "-t", "filter").Output()
			if err != nil {
				return 0, 0, fmt.Errorf("iptables-save in %s: %w", ns, err)
			}
			if n := len(c.chainRe.FindAllIndex(out, -1)); n == c.wantChains {
				self, _ := time.ParseDuration(took)
				return at, self, nil
			} else if n > c.wantChains {
				return 0, 0, fmt.Errorf("%d pod chains, want %d", n, c.wantChains)
			}
		}
	}
}

// ruleset is the filter table and the ipsets of ns.
func (b *bench) ruleset(ns string) (save, sets string, err error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "iptables-save", "-t", "filter").Output()
	if err != nil {
		return "", "", fmt.Errorf("iptables-save in %s: %w", ns, err)
	}
	setOut, err := exec.Command("ip", "netns", "exec", ns, "ipset", "save").Output()
	if err != nil {
		return "", "", fmt.Errorf("ipset save in %s: %w", ns, err)
	}
	return "\n" + string(out), "\n" + string(setOut), nil
}

// labelChanges adds peerLabel to the first namespace's second pod and waits until the
// controller has put its address into the watched rule's set (the set whose only member
// is the marker pod), then removes it again; changes times.
func (b *bench) labelChanges(ctx context.Context, ns, sets string) (added, removed []time.Duration, err error) {
	marker, target := b.w.pods[0], b.w.pods[len(b.w.namespaces)]
	watched := watchedSets(sets, marker.Status.PodIP)
	if len(watched) == 0 {
		return nil, nil, fmt.Errorf("no set holds the marker pod %s alone", marker.Status.PodIP)
	}
	patch := func(value string) error {
		body := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, peerLabel, value)
		_, err := b.client.CoreV1().Pods(target.Namespace).Patch(ctx, target.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	wait := func(in bool) error {
		deadline := time.Now().Add(b.changeTimeout)
		for time.Now().Before(deadline) {
			all := true
			for _, s := range watched {
				err := exec.Command("ip", "netns", "exec", ns, "ipset", "test", s, target.Status.PodIP).Run()
				all = all && (err == nil) == in
			}
			if all {
				return nil
			}
			time.Sleep(5 * time.Millisecond)
		}
		return &notEnforced{added: in, window: b.changeTimeout}
	}
	for range b.changes {
		for _, in := range []bool{true, false} {
			value := "null"
			if in {
				value = `"yes"`
			}
			start := time.Now()
			if err := patch(value); err != nil {
				return nil, nil, err
			}
			if err := wait(in); err != nil {
				return added, removed, err // the pod's state in the sets is unknown: no more changes
			}
			if in {
				added = append(added, time.Since(start))
			} else {
				removed = append(removed, time.Since(start))
			}
		}
	}
	return added, removed, nil
}

// watchedSets are the sets in an `ipset save` whose only member is ip.
func watchedSets(save, ip string) []string {
	members := map[string][]string{}
	for _, line := range strings.Split(save, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "add" {
			members[f[1]] = append(members[f[1]], f[2])
		}
	}
	var out []string
	for s, m := range members {
		if len(m) == 1 && m[0] == ip {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

type floor struct{ sets, rules time.Duration }

// floor restores sets and then save into a fresh namespace and times both.
func (b *bench) floor(save, sets string) (floor, error) {
	ns, err := b.netns("floor-" + strconv.Itoa(len(b.netnses)))
	if err != nil {
		return floor{}, err
	}
	defer b.delNetns(ns)
	timed := func(input string, args ...string) (time.Duration, error) {
		cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...)
		cmd.Stdin = strings.NewReader(input)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%s: %w: %s", args[0], err, stderr.String())
		}
		return time.Since(start), nil
	}
	var f floor
	if f.sets, err = timed(sets, "ipset", "restore"); err != nil {
		return f, err
	}
	f.rules, err = timed(save, "iptables-restore")
	return f, err
}

func (b *bench) onCleanup(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopping = append(b.stopping, fn)
}

func (b *bench) delNetns(ns string) {
	_ = exec.Command("ip", "netns", "del", ns).Run()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, n := range b.netnses {
		if n == ns {
			b.netnses = append(b.netnses[:i], b.netnses[i+1:]...)
			break
		}
	}
}

// cleanup kills the controllers still running, deletes the namespaces (their rules and
// sets go with them) and stops the API server.
func (b *bench) cleanup() {
	for _, p := range b.procs {
		if p.ProcessState == nil {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
	for _, ns := range append([]string(nil), b.netnses...) {
		b.delNetns(ns)
	}
	for i := len(b.stopping) - 1; i >= 0; i-- {
		b.stopping[i]()
	}
}

func version(bin string) string {
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	if m := regexp.MustCompile(`v\d+\.\d+\.\d+`).Find(out); m != nil {
		return string(m)
	}
	return filepath.Base(bin)
}

func count(s, sub string) int { return strings.Count(s, sub) }

func median(ds []time.Duration) time.Duration { return benchapi.Percentile(ds, 0.5) }

// notEnforced is a label change a controller did not enforce within the window: the
// window is then a lower bound of its time, printed as such rather than failing the run.
type notEnforced struct {
	added  bool // the label added; else removed
	window time.Duration
}

func (n *notEnforced) Error() string {
	what := "removed"
	if n.added {
		what = "added"
	}
	return fmt.Sprintf("label %s: not enforced within %v (-change-timeout)", what, n.window)
}

// changeFigure is p50 / max of the label changes (added or removed) that were timed, or
// the lower bound when the change was not enforced.
func changeFigure(ds []time.Duration, late *notEnforced, added bool) string {
	if late != nil && late.added == added {
		return fmt.Sprintf("> %v (not enforced)", late.window)
	}
	if len(ds) == 0 {
		return "-"
	}
	return fmt.Sprintf("%v / %v", median(ds).Round(time.Millisecond), slices.Max(ds).Round(time.Millisecond))
}

// changeRatio is theirs / ours at p50, "> N x" when theirs is the window's lower bound.
func changeRatio(theirs []time.Duration, late *notEnforced, added bool, ours []time.Duration) string {
	switch {
	case len(ours) == 0:
		return "-"
	case late != nil && late.added == added:
		return fmt.Sprintf("> %.0fx (not enforced within %v)", ratio(late.window, median(ours)), late.window)
	case len(theirs) == 0:
		return "-"
	}
	return fmt.Sprintf("%.1fx", ratio(median(theirs), median(ours)))
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func nproc() int {
	out, _ := exec.Command("nproc").Output()
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}
