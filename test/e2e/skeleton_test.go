package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/labtest"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
)

const twoPods = `apiVersion: v1
kind: Pod
metadata: {name: a, labels: {app: netexec}}
spec:
  nodeName: node-1
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1}]
---
apiVersion: v1
kind: Pod
metadata: {name: b, labels: {app: netexec}}
spec:
  nodeName: node-2
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1}]
`

// TestWalkingSkeleton: two pods on two nodes reach each other across the lab; deleting a
// pod stops its containers and frees its IP; `down` leaves nothing behind.
func TestWalkingSkeleton(t *testing.T) {
	e := testenv.RequireBuilt(t)
	hostLinks := linkNames(t)
	name := testenv.UniqueName("e2e")
	ctx := context.Background()
	l, err := cluster.Up(ctx, cluster.Options{Name: name, Nodes: 2, BinDir: e.BinDir, ImagesDir: e.ImagesDir, Progress: testWriter{t}})
	if err != nil {
		t.Fatalf("minilab up: %v", err)
	}
	downDone := false
	t.Cleanup(func() {
		if !downDone {
			if err := cluster.Down(context.Background(), name); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	labtest.DumpLogsOnFailure(t, l)

	out, err := cluster.Kubectl(ctx, l, "get", "nodes")
	if err != nil || strings.Count(out, " Ready ") != 2 {
		t.Fatalf("want two Ready nodes: %v\n%s", err, out)
	}
	manifest := filepath.Join(t.TempDir(), "pods.yaml")
	if err := os.WriteFile(manifest, []byte(twoPods), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cluster.Kubectl(ctx, l, "apply", "-f", manifest); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	a := waitRunning(t, l, "a")
	b := waitRunning(t, l, "b")
	n1, n2 := l.Nodes[0], l.Nodes[1]
	for _, c := range []struct {
		pod  *corev1.Pod
		node lab.Node
	}{{a, n1}, {b, n2}} {
		_, cidr, _ := net.ParseCIDR(c.node.PodCIDR)
		if ip := net.ParseIP(c.pod.Status.PodIP); ip == nil || !cidr.Contains(ip) {
			t.Errorf("pod %s IP %q is not in %s's podCIDR %s", c.pod.Name, c.pod.Status.PodIP, c.node.Name, c.node.PodCIDR)
		}
		if c.pod.Status.HostIP != c.node.IP {
			t.Errorf("pod %s hostIP %q, want %s", c.pod.Name, c.pod.Status.HostIP, c.node.IP)
		}
	}

	// Cross-node routing: from node-1's namespace, and from inside pod a's namespace.
	bURL := fmt.Sprintf("http://%s:8080", b.Status.PodIP)
	got, err := httpGetIn(lab.NetNSPath(n1.NetNS), bURL+"/hostname")
	if err != nil || got != "b" {
		t.Errorf("node-1 → pod b /hostname = %q, %v; want \"b\"", got, err)
	}
	podANetNS := filepath.Join(n1.RunDir, "netns", string(a.UID))
	got, err = httpGetIn(podANetNS, bURL+"/clientip")
	if err != nil || !strings.HasPrefix(got, a.Status.PodIP+":") {
		t.Errorf("pod a → pod b /clientip = %q, %v; want pod a's own IP %s (no NAT between pods)", got, err, a.Status.PodIP)
	}

	// Deleting pod b stops its containers, removes its namespace and frees its IP.
	if out, err := cluster.Kubectl(ctx, l, "delete", "pod", "b", "--timeout=60s"); err != nil {
		t.Fatalf("delete pod b: %v\n%s", err, out)
	}
	rt, err := runtime.New(ctx, cluster.ContainerdSocket(l), cluster.ContainerdNamespace(n2))
	if err != nil {
		t.Fatal(err)
	}
	left, err := rt.ListContainers(ctx, string(b.UID))
	rt.Close()
	if err != nil || len(left) != 0 {
		t.Errorf("pod b's containers after delete: %v %+v", err, left)
	}
	if _, err := os.Stat(filepath.Join(n2.RunDir, "netns", string(b.UID))); !os.IsNotExist(err) {
		t.Errorf("pod b's network namespace still exists: %v", err)
	}
	if allocated := hostLocalIPs(t, n2); contains(allocated, b.Status.PodIP) {
		t.Errorf("pod b's IP %s is still allocated: %v", b.Status.PodIP, allocated)
	}

	if err := cluster.Down(ctx, name); err != nil {
		t.Fatalf("minilab down: %v", err)
	}
	downDone = true
	assertNothingLeft(t, l, hostLinks)
}

func waitRunning(t *testing.T, l *lab.Lab, name string) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := cluster.Kubectl(context.Background(), l, "get", "pod", name, "-o", "json")
		var pod corev1.Pod
		if err == nil && json.Unmarshal([]byte(out), &pod) == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" {
			return &pod
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not Running with an IP after 90s: %v\n%s", name, err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// hostLocalIPs lists the addresses host-local has handed out on a node (one file per IP).
func hostLocalIPs(t *testing.T, n lab.Node) []string {
	entries, err := os.ReadDir(filepath.Join(n.RunDir, "cni", "networks", "minik8s"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var ips []string
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			ips = append(ips, e.Name())
		}
	}
	return ips
}

// assertNothingLeft checks that a lab that went down left no namespace, link, mount,
// directory, process or IP allocation on the host.
func assertNothingLeft(t *testing.T, l *lab.Lab, hostLinksBefore []string) {
	t.Helper()
	nsEntries, _ := os.ReadDir(lab.NetNSDir)
	for _, e := range nsEntries {
		if strings.HasPrefix(e.Name(), "mk-"+l.Name+"-") {
			t.Errorf("network namespace %s left behind", e.Name())
		}
	}
	for _, dir := range []string{l.StateDir, l.RunDir} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("directory %s left behind (host-local allocations, logs, state)", dir)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, l.RunDir) || strings.Contains(line, l.StateDir) || strings.Contains(line, "mk-"+l.Name+"-") {
			t.Errorf("mount left behind: %s", line)
		}
	}
	if after := linkNames(t); strings.Join(after, ",") != strings.Join(hostLinksBefore, ",") {
		t.Errorf("host links changed: before %v, after %v", hostLinksBefore, after)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if s := strings.ReplaceAll(string(cmdline), "\x00", " "); strings.Contains(s, l.RunDir) || strings.Contains(s, l.StateDir) {
			t.Errorf("process left behind: %s (%s)", s, filepath.Dir(p))
		}
	}
}

func linkNames(t *testing.T) []string {
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = l.Attrs().Name
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
