package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// upLab brings up a minilab cluster of n nodes for the test, prints its daemons' logs if the
// test fails, and takes it down when the test ends.
func upLab(t *testing.T, prefix string, nodes int) *lab.Lab {
	t.Helper()
	return upLabWith(t, prefix, cluster.Options{Nodes: nodes})
}

// upLabWith is upLab with more of cluster.Options (o.Nodes and the like).
func upLabWith(t *testing.T, prefix string, o cluster.Options) *lab.Lab {
	t.Helper()
	e := requireEnv(t)
	name := uniqueName(prefix)
	o.Name, o.BinDir, o.ImagesDir, o.Progress = name, e.binDir, e.imagesDir, testWriter{t}
	l, err := cluster.Up(context.Background(), o)
	if err != nil {
		t.Fatalf("minilab up: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Down(context.Background(), name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	dumpLogsOnFailure(t, l)
	return l
}

// mustKubectl runs kubectl inside the lab and fails the test when it fails.
func mustKubectl(t *testing.T, l *lab.Lab, args ...string) string {
	t.Helper()
	out, err := cluster.Kubectl(context.Background(), l, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// applyYAML applies a manifest inside the lab.
func applyYAML(t *testing.T, l *lab.Lab, manifest string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, l, "apply", "-f", path)
}

// labRanges are the lab's addresses; the host must never route to any of them.
var labRanges = []string{lab.Subnet, "10.200.0.0/16", lab.ClusterCIDR, lab.ServiceCIDR, cluster.LoadBalancerPool[:strings.Index(cluster.LoadBalancerPool, "-")] + "/32"}

// checkNoHostRoute fails t if the host namespace routes to any lab range, or has an
// iptables rule naming one.
func checkNoHostRoute(t *testing.T) {
	t.Helper()
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Dst == nil || r.Dst.Contains(net.IPv4zero) {
			continue // the default route leads to the real network, not into the lab
		}
		for _, cidr := range labRanges {
			_, lr, _ := net.ParseCIDR(cidr)
			if lr.Contains(r.Dst.IP) || r.Dst.Contains(lr.IP) {
				t.Errorf("the host routes %s (table %d) into the lab range %s", r.Dst, r.Table, cidr)
			}
		}
	}
	out, err := exec.Command("iptables-save").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "10.200.") || strings.Contains(line, "10.244.") {
			t.Errorf("the host's iptables names a lab address: %s", line)
		}
	}
}

// freeLoopbackPort is a host loopback port nobody listens on now.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// hostGet is an HTTP GET from the host namespace, to a loopback address.
func hostGet(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestLabFromTheHost: plain kubectl on the host, with the host kubeconfig minilab writes,
// reaches the lab through its loopback port (get, logs, exec, port-forward), a published
// NodePort answers on 127.0.0.1, and the host never gets a route into the lab; after down,
// no listener, process or route is left.
func TestLabFromTheHost(t *testing.T) {
	e := requireEnv(t)
	checkNoHostRoute(t)
	nodePortHost := freeLoopbackPort(t)
	name := uniqueName("e2e-reach")
	l, err := cluster.Up(context.Background(), cluster.Options{Name: name, Nodes: 2, BinDir: e.binDir, ImagesDir: e.imagesDir,
		Progress: testWriter{t}, Publish: []string{fmt.Sprintf("127.0.0.1:%d:node-1:30080", nodePortHost)}})
	if err != nil {
		t.Fatalf("minilab up: %v", err)
	}
	down := func() {
		if err := cluster.Down(context.Background(), name); err != nil {
			t.Errorf("minilab down: %v", err)
		}
	}
	downOnce := sync.OnceFunc(down)
	t.Cleanup(downOnce)
	dumpLogsOnFailure(t, l)
	minilab := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(e.binDir, "minilab"), append([]string{"--name", name}, args...)...).CombinedOutput()
		return string(out), err
	}
	hostKubectl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("kubectl", append([]string{"--kubeconfig", l.HostKubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s (from the host): %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out, err := minilab("kubeconfig"); err != nil || strings.TrimSpace(out) != l.HostKubeconfig {
		t.Fatalf("minilab kubeconfig: %q, %v; want %s", out, err, l.HostKubeconfig)
	}
	if out := hostKubectl("get", "nodes"); !strings.Contains(out, "node-1") || !strings.Contains(out, "node-2") {
		t.Fatalf("kubectl get nodes from the host:\n%s", out)
	}
	applyYAML(t, l, `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeName: node-2
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: 30080}]
`)
	hostKubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=90s")
	if out := hostKubectl("logs", "web"); out == "" {
		t.Error("kubectl logs web from the host printed nothing")
	}
	if out := hostKubectl("exec", "web", "--", "hostname"); strings.TrimSpace(out) != "web" {
		t.Errorf("kubectl exec web -- hostname from the host: %q", out)
	}

	t.Run("port-forward", func(t *testing.T) {
		port := freeLoopbackPort(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pf := exec.CommandContext(ctx, "kubectl", "--kubeconfig", l.HostKubeconfig, "port-forward", "pod/web", fmt.Sprintf("%d:8080", port))
		var out strings.Builder
		pf.Stdout, pf.Stderr = &out, &out
		if err := pf.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = pf.Wait() }()
		var got string
		for range 40 { // kubectl listens once the stream is up
			if got, err = hostGet(fmt.Sprintf("http://127.0.0.1:%d/hostname", port)); err == nil {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if got != "web" {
			t.Fatalf("GET /hostname through kubectl port-forward on 127.0.0.1:%d: %q, %v\n%s", port, got, err, out.String())
		}
	})

	t.Run("published NodePort", func(t *testing.T) {
		var got string
		for range 40 { // miniproxy programs the NodePort shortly after the endpoint is ready
			if got, err = hostGet(fmt.Sprintf("http://127.0.0.1:%d/hostname", nodePortHost)); err == nil && got == "web" {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if got != "web" {
			t.Fatalf("GET 127.0.0.1:%d (published node-1:30080): %q, %v", nodePortHost, got, err)
		}
		// minilab publish on the running lab, to the other node; a non-loopback address is refused.
		second := freeLoopbackPort(t)
		if out, err := minilab("publish", fmt.Sprintf("%d:node-2:30080", second)); err != nil {
			t.Fatalf("minilab publish: %v\n%s", err, out)
		}
		if got, err := hostGet(fmt.Sprintf("http://127.0.0.1:%d/hostname", second)); got != "web" {
			t.Errorf("GET 127.0.0.1:%d (minilab publish node-2:30080): %q, %v", second, got, err)
		}
		if out, err := minilab("publish", "0.0.0.0:18080:node-1:30080"); err == nil || !strings.Contains(out, "loopback") {
			t.Errorf("minilab publish 0.0.0.0:...: %v\n%s", err, out)
		}
	})

	t.Run("exec client", func(t *testing.T) {
		out, err := minilab("exec", "client", "--", "ip", "-4", "-o", "addr", "show", "eth0")
		if err != nil || !strings.Contains(out, lab.ClientIP+"/") {
			t.Fatalf("minilab exec client: %v\n%s", err, out)
		}
	})

	checkNoHostRoute(t)
	l, err = lab.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	var forwarders []lab.ProcessRecord
	for _, p := range l.Processes {
		if strings.HasPrefix(p.Name, "publish-") {
			forwarders = append(forwarders, p)
		}
	}
	if len(forwarders) != 3 || len(l.Published) != 3 {
		t.Errorf("want 3 forwarders (API, --publish, minilab publish), lab.json has %d processes and %d publications", len(forwarders), len(l.Published))
	}
	downOnce()
	for _, p := range l.Published {
		if c, err := net.DialTimeout("tcp", p.Listen, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still listens after minilab down", p.Listen)
		}
	}
	for _, p := range forwarders {
		if err := syscall.Kill(p.PID, 0); err == nil {
			if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID)); strings.Contains(string(cmdline), "forward") {
				t.Errorf("forwarder %s (PID %d) outlived minilab down", p.Name, p.PID)
			}
		}
	}
	checkNoHostRoute(t)
}
