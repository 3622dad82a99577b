package controlplane

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLeaderElectionFailover: two miniapi on one etcd, the first holding both Leases and
// running the controllers and the scheduler; when it stops, the second takes over within
// 20 s and its controllers act.
func TestLeaderElectionFailover(t *testing.T) {
	etcd := etcdtest.ForTest(t)
	storeFlag := "etcd://" + strings.Join(etcd.HostPorts, ",")
	elect := func(o *Options) {
		o.Store = storeFlag
		o.LeaderElection = LeaderElection{Enabled: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}
	}
	first := newRestartable(t, elect)
	a := first.start()
	ctx := context.Background()
	holder := func(c *cluster, lease string) string {
		l, err := c.client.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var leader string
	waitFor(t, "the first miniapi to lead the controllers", func() bool { leader = holder(a, "kube-controller-manager"); return leader != "" })
	waitFor(t, "the first miniapi to lead the scheduler", func() bool { return holder(a, "kube-scheduler") == leader })
	b := startClusterWith(t, elect)
	b.mustKubectl(t, "", "create", "deployment", "web", "--image=localhost/minik8s/netexec:v1", "--replicas=2")
	countPods := func() int {
		list, err := b.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return -1
		}
		return len(list.Items)
	}
	waitFor(t, "2 pods from the leader's controllers", func() bool { return countPods() == 2 })
	if h := holder(b, "kube-controller-manager"); h != leader {
		t.Fatalf("the second miniapi took the lease while the first led: %q", h)
	}

	first.stop()
	start := time.Now()
	waitFor(t, "the second miniapi to lead", func() bool {
		h := holder(b, "kube-controller-manager")
		return h != "" && h != leader && holder(b, "kube-scheduler") == h
	})
	b.mustKubectl(t, "", "scale", "deployment", "web", "--replicas=3")
	waitFor(t, "3 pods after the failover", func() bool { return countPods() == 3 })
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("failover took %v, want within 20 s", took)
	}
	time.Sleep(time.Second)
	if n := countPods(); n != 3 {
		t.Errorf("%d pods after the failover settled, want exactly 3", n)
	}
}

// miniapiProcessEnv carries the Options of a miniapi the test binary runs as a child
// process (TestMiniapiProcess), so a test can kill -9 it.
const miniapiProcessEnv = "MINIK8S_TEST_MINIAPI_OPTIONS"

// TestMiniapiProcess is not a test: it is the body of the child process
// startMiniapiProcess starts, and returns at once in a normal run.
func TestMiniapiProcess(t *testing.T) {
	spec := os.Getenv(miniapiProcessEnv)
	if spec == "" {
		return
	}
	var p processOptions
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		t.Fatal(err)
	}
	o := Options{DataDir: p.DataDir, BindAddress: p.BindAddress, SecurePort: p.SecurePort, ServiceRange: "10.96.0.0/12", Store: p.Store,
		AdvertiseAddress: p.AdvertiseAddress, MasterLeaseTTL: p.MasterLeaseTTL}
	o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

// processOptions are the Options a child miniapi is given.
type processOptions struct {
	DataDir, Store   string
	BindAddress      string
	SecurePort       int
	AdvertiseAddress netip.Addr
	MasterLeaseTTL   time.Duration
}

// startMiniapiProcess runs miniapi with o in a child process; the test kills it.
func startMiniapiProcess(t *testing.T, o processOptions) *exec.Cmd {
	spec, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMiniapiProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), miniapiProcessEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// TestKubernetesEndpointsWithTwoAPIServers: with two miniapi on one etcd the `kubernetes`
// Service's Endpoints and EndpointSlice list both (kube-apiserver's lease endpoint
// reconciler); a miniapi killed with SIGKILL drops out once its lease has expired, one
// stopped gracefully at once.
func TestKubernetesEndpointsWithTwoAPIServers(t *testing.T) {
	etcd := etcdtest.ForTest(t)
	const ttl = 3 * time.Second
	// One port for all, on loopback addresses of their own, as API servers on several hosts
	// serve on one port (the endpoints carry one port, as kube-apiserver's do).
	port := freeport.For(t)
	server := func(ip string) func(*Options) {
		return func(o *Options) {
			o.BindAddress, o.SecurePort = "127.0.0."+ip[strings.LastIndex(ip, ".")+1:], port
			o.Store = "etcd://" + strings.Join(etcd.HostPorts, ",")
			o.AdvertiseAddress = netip.MustParseAddr(ip) // never dialled: only listed
			o.MasterLeaseTTL = ttl
		}
	}
	a := startClusterWith(t, server("10.255.0.1"))
	ctx := context.Background()
	listed := func() (endpoints, slice string) {
		var ips []string
		if ep, err := a.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			for _, s := range ep.Subsets {
				for _, addr := range s.Addresses {
					ips = append(ips, addr.IP)
				}
			}
		}
		endpoints, ips = strings.Join(ips, ","), nil
		if sl, err := a.client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			for _, e := range sl.Endpoints {
				ips = append(ips, e.Addresses...)
			}
		}
		return endpoints, strings.Join(ips, ",")
	}
	waitUntilListed := func(what, want string) {
		t.Helper()
		waitFor(t, what, func() bool { ep, sl := listed(); return ep == want && sl == want })
	}
	waitUntilListed("the first server's address", "10.255.0.1")

	child := startMiniapiProcess(t, processOptions{DataDir: t.TempDir(), BindAddress: "127.0.0.2", SecurePort: port, Store: "etcd://" + strings.Join(etcd.HostPorts, ","),
		AdvertiseAddress: netip.MustParseAddr("10.255.0.2"), MasterLeaseTTL: ttl})
	waitUntilListed("both servers' addresses", "10.255.0.1,10.255.0.2")

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitUntilListed("the killed server's address to go", "10.255.0.1")
	gone := time.Since(killed)
	t.Logf("the SIGKILLed server's address went %v after the kill (lease TTL %v, renewed every %v)", gone.Round(100*time.Millisecond), ttl, ttl*2/3)
	if gone > ttl+ttl*2/3+5*time.Second {
		t.Errorf("the killed server's address stayed %v, want within its lease's TTL and one renewal period", gone)
	}

	third := newRestartable(t, server("10.255.0.3"))
	third.start()
	waitUntilListed("the third server's address", "10.255.0.1,10.255.0.3")
	third.stop()
	if ep, sl := listed(); ep != "10.255.0.1" || sl != "10.255.0.1" {
		t.Errorf("after a graceful stop: endpoints %q, slice %q; want the stopped server gone at once", ep, sl)
	}

	// Renewals that change nothing write no new Endpoints (no event for every watcher).
	version := func() string {
		ep, err := a.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ep.ResourceVersion
	}
	before := version()
	time.Sleep(ttl)
	if after := version(); after != before {
		t.Errorf("the kubernetes Endpoints were rewritten by a renewal that changed nothing: resourceVersion %s → %s", before, after)
	}
}
