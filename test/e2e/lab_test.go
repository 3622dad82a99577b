package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/images"
	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/internal/labtest"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/ociimage"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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
	e := testenv.RequireBuilt(t)
	name := testenv.UniqueName(prefix)
	o.Name, o.BinDir, o.ImagesDir, o.Progress = name, e.BinDir, e.ImagesDir, testWriter{t}
	l, err := cluster.Up(context.Background(), o)
	if err != nil {
		t.Fatalf("minilab up: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Down(context.Background(), name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	labtest.DumpLogsOnFailure(t, l)
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

// podStatus is the STATUS column of `kubectl get pod name` inside the lab, or kubectl's
// output where it has none (an error).
func podStatus(ctx context.Context, l *lab.Lab, name string) string {
	out, _ := cluster.Kubectl(ctx, l, "get", "pod", name, "--no-headers")
	if f := strings.Fields(out); len(f) > 2 {
		return f[2]
	}
	return out
}

// applyYAML applies a manifest inside the lab.
func applyYAML(t *testing.T, l *lab.Lab, manifest string) {
	t.Helper()
	mustKubectl(t, l, "apply", "-f", writeManifest(t, manifest))
}

// writeManifest writes a manifest into the test's temp dir, for kubectl -f.
func writeManifest(t *testing.T, manifest string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
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
	e := testenv.RequireBuilt(t)
	checkNoHostRoute(t)
	nodePortHost := freeport.For(t)
	name := testenv.UniqueName("e2e-reach")
	l, err := cluster.Up(context.Background(), cluster.Options{Name: name, Nodes: 2, BinDir: e.BinDir, ImagesDir: e.ImagesDir,
		Progress: testWriter{t}, DNS: false, Uplink: true, NodeMonitorGracePeriod: 15 * time.Second, Publish: []string{fmt.Sprintf("127.0.0.1:%d:node-1:30080", nodePortHost)}})
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
	labtest.DumpLogsOnFailure(t, l)
	minilab := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(e.BinDir, "minilab"), append([]string{"--name", name}, args...)...).CombinedOutput()
		return string(out), err
	}
	// Only stdout is compared: kubectl 1.32's WebSocket client may log "Unknown stream
	// id 1, discarding message" on stderr for the empty frame that opens an exec stream,
	// a race of its own that kube-apiserver's stream translator (ours too) meets alike.
	hostKubectl := func(args ...string) string {
		t.Helper()
		var stderr strings.Builder
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", l.HostKubeconfig}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl %s (from the host): %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
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
		port := freeport.For(t)
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
		second := freeport.For(t)
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

	t.Run("uplink", func(t *testing.T) { testUplink(t, l, minilab, hostKubectl) })
	t.Run("image load", func(t *testing.T) { testImageLoad(t, l, minilab, hostKubectl) })
	t.Run("faults", func(t *testing.T) { testFaults(t, l, minilab, hostKubectl) })

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

// testImageLoad: an image built here, as a tarball and as an OCI layout directory, is
// loaded with minilab image load and runs with imagePullPolicy Never on every node.
func testImageLoad(t *testing.T, l *lab.Lab, minilab func(...string) (string, error), kubectl func(...string) string) {
	busybox, err := os.ReadFile(images.DefaultBusybox)
	if err != nil {
		t.Fatalf("a static busybox for the test image: %v", err)
	}
	dir := t.TempDir()
	build := func(name, file string) string {
		layer := ociimage.NewLayer()
		layer.Dir("bin", 0o755)
		layer.File("bin/busybox", 0o755, busybox)
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := ociimage.WriteLayout(f, ociimage.Image{Name: name, Layer: layer, Config: ocispec.ImageConfig{
			Cmd: []string{"/bin/busybox", "sh", "-c", "echo loaded-image-ok; exec /bin/busybox sleep 3600"}}}); err != nil {
			t.Fatal(err)
		}
		return f.Name()
	}
	tarball := build("example.test/byo/tarball:v1", "byo.tar")
	layoutDir := filepath.Join(dir, "layout")
	if err := os.Mkdir(layoutDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", build("example.test/byo/layout:v1", "layout.tar"), "-C", layoutDir).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v: %s", err, out)
	}
	for _, src := range []string{tarball, layoutDir} {
		if out, err := minilab("image", "load", src); err != nil || !strings.Contains(out, "on 2 node(s)") {
			t.Fatalf("minilab image load %s: %v\n%s", src, err, out)
		}
	}
	if out, err := minilab("image", "load", t.TempDir()); err == nil || !strings.Contains(out, "index.json") {
		t.Errorf("minilab image load of an empty directory: %v\n%s", err, out)
	}
	out, err := minilab("image", "ls")
	if err != nil {
		t.Fatalf("minilab image ls: %v\n%s", err, out)
	}
	for _, node := range []string{"node-1", "node-2"} {
		for _, img := range []string{"example.test/byo/tarball:v1", "example.test/byo/layout:v1"} {
			if !regexp.MustCompile(node + `\s+` + regexp.QuoteMeta(img)).MatchString(out) {
				t.Errorf("minilab image ls does not show %s on %s:\n%s", img, node, out)
			}
		}
	}
	var pods []string
	for _, node := range []string{"node-1", "node-2"} {
		for _, img := range []string{"tarball", "layout"} {
			pod := "byo-" + img + "-" + node
			pods = append(pods, "pod/"+pod)
			applyYAML(t, l, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeName: %s
  containers: [{name: c, image: example.test/byo/%s:v1, imagePullPolicy: Never}]
`, pod, node, img))
		}
	}
	kubectl(append([]string{"wait", "--for=condition=Ready", "--timeout=90s"}, pods...)...)
	for _, pod := range pods {
		if out := kubectl("logs", pod); strings.TrimSpace(out) != "loaded-image-ok" {
			t.Errorf("kubectl logs %s: %q", pod, out)
		}
	}
	kubectl(append([]string{"delete", "--wait=false"}, pods...)...)
}

// faultsJSON is the faults of minilab info -o json.
func faultsJSON(t *testing.T, minilab func(...string) (string, error)) []map[string]string {
	t.Helper()
	out, err := minilab("info", "-o", "json")
	if err != nil {
		t.Fatalf("minilab info -o json: %v\n%s", err, out)
	}
	var in struct {
		Faults []map[string]string `json:"faults"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("minilab info -o json: %v\n%s", err, out)
	}
	return in.Faults
}

// testFaults: each fault shows in minilab info and has its effect; heal undoes it.
func testFaults(t *testing.T, l *lab.Lab, minilab func(...string) (string, error), kubectl func(...string) string) {
	must := func(args ...string) string {
		t.Helper()
		out, err := minilab(args...)
		if err != nil {
			t.Fatalf("minilab %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	nodeReady := func(node, want string) {
		t.Helper()
		kubectl("wait", "--for=condition=Ready="+want, "node/"+node, "--timeout=60s")
	}
	ping := func(from, to string) error {
		_, err := minilab("exec", from, "--", "busybox", "ping", "-c", "1", "-W", "1", to)
		return err
	}
	node2 := l.Nodes[1].IP

	t.Run("partition", func(t *testing.T) {
		start := time.Now()
		must("partition", "node-2")
		if f := faultsJSON(t, minilab); len(f) != 1 || f[0]["kind"] != "partition" || f[0]["target"] != "node-2" {
			t.Errorf("minilab info -o json faults: %v", f)
		}
		if ping("node-1", node2) == nil {
			t.Error("node-1 reaches node-2 across the partition")
		}
		nodeReady("node-2", "Unknown") // the grace period (15s) without a heartbeat
		t.Logf("node-2 NotReady %v after the partition", time.Since(start).Round(time.Second))
		must("heal")
		nodeReady("node-2", "True")
		if f := faultsJSON(t, minilab); len(f) != 0 {
			t.Errorf("faults after heal: %v", f)
		}
	})

	t.Run("link", func(t *testing.T) {
		var err error
		must("link", "down", "node-2")
		if ping("node-1", node2) == nil {
			t.Error("node-1 reaches node-2 with node-2's link down")
		}
		if out := must("info"); !strings.Contains(out, "fault: link-down node-2") {
			t.Errorf("minilab info:\n%s", out)
		}
		must("link", "up", "node-2")
		for range 5 { // the neighbour entry that failed is retried on the next packet
			if err = ping("node-1", node2); err == nil {
				break
			}
		}
		if err != nil {
			t.Errorf("node-1 does not reach node-2 with its link up again: %v", err)
		}
	})

	t.Run("stop and start", func(t *testing.T) {
		must("stop", "--grace", "0", "miniproxy-node-2")
		if f := faultsJSON(t, minilab); len(f) != 1 || f[0]["kind"] != "stop" || f[0]["target"] != "miniproxy-node-2" {
			t.Errorf("minilab info -o json faults: %v", f)
		}
		if _, err := minilab("stop", "miniproxy-node-2"); err == nil {
			t.Error("stopping a stopped daemon succeeded")
		}
		must("stop", "node-1")
		must("start", "node-1")
		must("heal") // starts miniproxy-node-2
		l2, err := lab.Load(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"miniproxy-node-2", "minilet-node-1"} {
			if !slices.ContainsFunc(l2.Processes, func(p lab.ProcessRecord) bool { return p.Name == want && syscall.Kill(p.PID, 0) == nil }) {
				t.Errorf("%s is not running after start and heal", want)
			}
		}
		nodeReady("node-1", "True")
	})

	t.Run("netem", func(t *testing.T) {
		out, err := minilab("netem", "node-2", "--delay", "200ms")
		if err != nil && strings.Contains(out, "sch_netem") {
			// This kernel has no netem: the error names the module, and no fault is recorded.
			if f := faultsJSON(t, minilab); len(f) != 0 {
				t.Errorf("a failed netem left faults: %v", f)
			}
			t.Logf("no netem in this kernel, as minilab says: %s", strings.TrimSpace(out))
			return
		}
		if err != nil {
			t.Fatalf("minilab netem: %v\n%s", err, out)
		}
		out, err = minilab("exec", "node-1", "--", "busybox", "ping", "-c", "1", "-W", "2", node2)
		m := regexp.MustCompile(`time=([0-9.]+) ms`).FindStringSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("ping across a 200ms delay: %v\n%s", err, out)
		}
		if rtt, _ := strconv.ParseFloat(m[1], 64); rtt < 200 {
			t.Errorf("a round trip to node-2 took %sms with 200ms of netem delay", m[1])
		}
		must("netem", "node-2", "--loss", "100%")
		if ping("node-1", node2) == nil {
			t.Error("node-1 reaches node-2 through 100% loss")
		}
		must("heal")
		if err := ping("node-1", node2); err != nil {
			t.Errorf("node-1 does not reach node-2 after heal: %v", err)
		}
	})
}

// TestLabProxyModeIPVS: minilab up --proxy-mode ipvs runs miniproxy in IPVS mode where the
// kernel has ip_vs (the kubernetes Service's virtual server in a node's /proc/net/ip_vs),
// and where it has not, as on the test host, fails before making anything, naming ip_vs.
func TestLabProxyModeIPVS(t *testing.T) {
	e := testenv.RequireBuilt(t)
	name := testenv.UniqueName("e2e-ipvs")
	minilab := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(e.BinDir, "minilab"), append([]string{"--name", name}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := minilab("up", "--proxy-mode", "nftables"); err == nil || !strings.Contains(out, `--proxy-mode "nftables"`) {
		t.Errorf("minilab up --proxy-mode nftables: %v\n%s", err, out)
	}
	if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
		_ = exec.Command("modprobe", "-q", "ip_vs").Run()
	}
	if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
		out, err := minilab("up", "--proxy-mode", "ipvs", "--images-dir", e.ImagesDir)
		if err == nil || !strings.Contains(out, "module ip_vs") {
			t.Fatalf("minilab up --proxy-mode ipvs on a kernel without ip_vs: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(lab.StateRoot, name)); err == nil {
			t.Errorf("the refused lab %s was made", name)
		}
		t.Logf("this kernel has no ip_vs; minilab says: %s", strings.TrimSpace(out))
		return
	}
	l := upLabWith(t, "e2e-ipvs", cluster.Options{Nodes: 1, ProxyMode: cluster.ProxyIPVS})
	var out []byte
	for range 20 {
		out, _ = lab.Command(context.Background(), l.Nodes[0].NetNS, "cat", "/proc/net/ip_vs").CombinedOutput()
		if strings.Contains(string(out), "0A600001:01BB") { // 10.96.0.1:443, the kubernetes Service
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("no IPVS virtual server for 10.96.0.1:443 on node-1:\n%s", out)
}

// testUplink: a pod's request to the uplink host arrives from its node's address
// (MASQUERADE), and a LoadBalancer Service with externalTrafficPolicy Local, reached from
// the uplink host, sees the uplink host's own address. The web pod (netexec) runs on node-2.
func testUplink(t *testing.T, l *lab.Lab, minilab func(...string) (string, error), kubectl func(...string) string) {
	out, err := minilab("info", "-o", "json")
	var in struct {
		Uplink struct {
			IP string `json:"ip"`
		} `json:"uplink"`
	}
	if err != nil || json.Unmarshal([]byte(out), &in) != nil || in.Uplink.IP != lab.UplinkHostIP {
		t.Fatalf("minilab info -o json: uplink.ip is %q, want %s (%v)\n%s", in.Uplink.IP, lab.UplinkHostIP, err, out)
	}
	applyYAML(t, l, `apiVersion: v1
kind: Pod
metadata: {name: egress}
spec:
  nodeName: node-1
  containers: [{name: c, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Service
metadata: {name: web-lb}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`)
	kubectl("wait", "--for=condition=Ready", "pod/egress", "--timeout=60s")
	got := strings.TrimSpace(kubectl("exec", "egress", "--", "timeout", "5", "wget", "-qO-", "http://"+lab.UplinkHostIP+"/"))
	if got != l.Nodes[0].IP {
		t.Errorf("the uplink host saw the pod's request from %q, want node-1's address %s", got, l.Nodes[0].IP)
	}
	if out, err := minilab("exec", "uplink", "--", "timeout", "3", "busybox", "wget", "-qO-", "http://"+lab.UplinkHostIP+"/"); err != nil || strings.TrimSpace(out) != lab.UplinkHostIP {
		t.Errorf("minilab exec uplink -- wget itself: %q, %v", out, err)
	}
	var lbIP string
	for range 60 {
		if lbIP = kubectl("get", "service", "web-lb", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}"); lbIP != "" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if lbIP == "" {
		t.Fatal("web-lb got no LoadBalancer address")
	}
	for range 20 { // the node with the endpoint answers ARP for the address once miniproxy synced
		if out, err = minilab("exec", "uplink", "--", "timeout", "3", "busybox", "wget", "-qO-", "http://"+lbIP+"/clientip"); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil || !strings.HasPrefix(out, lab.UplinkHostIP+":") {
		t.Errorf("GET http://%s/clientip from the uplink host (externalTrafficPolicy Local): %q, %v; want the uplink host's address kept", lbIP, out, err)
	}
	kubectl("delete", "pod/egress", "service/web-lb", "--wait=false")
}
