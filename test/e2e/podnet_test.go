package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodeutil "k8s.io/component-helpers/node/util"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/inspect"
)

// podnetPods: a netexec pod on each node (pn-2 with hostPort 18081, pn-3 shaped by an
// ingress-bandwidth annotation).
const podnetPods = `apiVersion: v1
kind: Pod
metadata: {name: pn-1}
spec: {nodeName: node-1, containers: [{name: netexec, image: localhost/minik8s/netexec:v1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: pn-2}
spec:
  nodeName: node-2
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{containerPort: 8080, hostPort: 18081}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: pn-3, annotations: {kubernetes.io/ingress-bandwidth: 10M}}
spec: {nodeName: node-3, containers: [{name: netexec, image: localhost/minik8s/netexec:v1}]}
`

// TestPodNetworkHostGW: three nodes on one segment, pods routed between them by host-gw.
func TestPodNetworkHostGW(t *testing.T) {
	testPodNetwork(t, "host-gw", 1)
}

// TestPodNetworkVXLANSegments: three nodes on two segments joined only by a router; the
// VXLAN overlay carries pods' traffic across it.
func TestPodNetworkVXLANSegments(t *testing.T) {
	testPodNetwork(t, "vxlan", 2)
}

func testPodNetwork(t *testing.T, mode string, segments int) {
	ctx := context.Background()
	l := upLabWith(t, "pn", cluster.Options{Nodes: 3, PodNetwork: mode, Segments: segments})
	applyYAML(t, l, podnetPods)
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"pn-1", "pn-2", "pn-3"} {
		pods[name] = waitRunning(t, l, name)
	}
	podNS := func(i int) string { return podNetNS(l, i, pods[fmt.Sprintf("pn-%d", i+1)]) }
	podIP := func(i int) string { return pods[fmt.Sprintf("pn-%d", i+1)].Status.PodIP }

	t.Run("NodeState", func(t *testing.T) {
		for i, n := range l.Nodes {
			node := getNode(t, l, n.Name)
			if got := node.Annotations["networking.minik8s.io/pod-network"]; got != mode {
				t.Errorf("%s pod-network annotation %q, want %q", n.Name, got, mode)
			}
			if cond := nodeCondition(node, corev1.NodeNetworkUnavailable); cond == nil || cond.Status != corev1.ConditionFalse {
				t.Errorf("%s NetworkUnavailable = %+v, want False", n.Name, cond)
			}
			r := minletNetwork(t, l, n)
			want := map[string]bool{}
			for j, other := range l.Nodes {
				if j != i {
					want[other.PodCIDR] = true
				}
			}
			if len(r.Routes) != 2 || !want[r.Routes[0].Dst] || !want[r.Routes[1].Dst] {
				t.Errorf("%s routes %+v, want one to each of %v", n.Name, r.Routes, want)
			}
			if r.Bridge == nil || r.Bridge.Name != "cni0" || len(r.Pods) != 1 || r.Pods[0].IP != podIP(i) || !r.Pods[0].OnBridge {
				t.Errorf("%s minilet network: bridge %+v pods %+v, want pn-%d %s on cni0", n.Name, r.Bridge, r.Pods, i+1, podIP(i))
			}
			if mode == "vxlan" && (r.VXLAN == nil || len(r.VXLAN.FDB) != 2 || len(r.VXLAN.Neighbours) != 2 || r.VXLAN.MTU != 1450) {
				t.Errorf("%s VXLAN %+v, want a 1450-MTU device with 2 FDB and 2 neighbour entries", n.Name, r.VXLAN)
			}
		}
		if out, err := lab.Command(ctx, l.Nodes[2].NetNS, "tc", "qdisc", "show").CombinedOutput(); err != nil || !strings.Contains(string(out), "rate 10Mbit") {
			t.Errorf("pn-3's ingress-bandwidth 10M is not a 10Mbit tbf on node-3: %v\n%s", err, out)
		}
	})

	t.Run("PodMatrix", func(t *testing.T) { podMatrix(t, l, pods) })

	t.Run("PodToNodes", func(t *testing.T) {
		// A listener on each node's IP, in the node's namespace, sees the pod's own address.
		for i := range l.Nodes {
			for _, n := range l.Nodes {
				if got := remoteAddrSeen(t, n.NetNS, n.IP, podNS(i)); got != podIP(i) {
					t.Errorf("pn-%d → %s (%s) arrived from %q; want pn-%d's own IP %s (pod-to-node is not NATed)", i+1, n.Name, n.IP, got, i+1, podIP(i))
				}
			}
		}
	})

	t.Run("NodesToPods", func(t *testing.T) {
		for _, n := range l.Nodes {
			for i := range l.Nodes {
				if got, err := httpGetIn(lab.NetNSPath(n.NetNS), "http://"+podIP(i)+":8080/hostname"); err != nil || got != fmt.Sprintf("pn-%d", i+1) {
					t.Errorf("%s → pn-%d (%s) /hostname = %q, %v", n.Name, i+1, podIP(i), got, err)
				}
			}
		}
	})

	t.Run("HostPortFromOtherNode", func(t *testing.T) {
		got, err := httpGetIn(lab.NetNSPath(l.Nodes[0].NetNS), "http://"+l.Nodes[1].IP+":18081/hostname")
		if err != nil || got != "pn-2" {
			t.Errorf("node-1 → node-2 hostPort 18081 /hostname = %q, %v; want pn-2", got, err)
		}
	})

	t.Run("EgressMasquerade", func(t *testing.T) {
		// The control plane is outside the cluster's pod and node addresses: a pod reaching it
		// shows up with its node's address.
		for i, n := range l.Nodes {
			if got := remoteAddrSeen(t, l.ControlPlane.NetNS, lab.ControlPlaneIP, podNS(i)); got != n.IP {
				t.Errorf("pn-%d → control plane arrived from %q, want its node's IP %s (masqueraded)", i+1, got, n.IP)
			}
		}
	})

	t.Run("MiniletRestart", func(t *testing.T) {
		// A long-lived connection from pn-1 to pn-3 survives both minilets restarting, and no
		// pod is wired again (same sandbox, same IP).
		conn := dialIn(t, podNS(0), podIP(2)+":8080")
		defer conn.Close()
		rd := bufio.NewReader(conn)
		if got := keepAliveGet(t, conn, rd, "/hostname"); got != "pn-3" {
			t.Fatalf("first request on the connection: %q", got)
		}
		before := cniResults(t, l)
		restarted := time.Now()
		for _, n := range []string{"minilet-node-1", "minilet-node-3"} {
			if _, err := l.Restart(n, 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []lab.Node{l.Nodes[0], l.Nodes[2]} {
			waitFor(t, n.Name+" heartbeat after the restart", 60*time.Second, func() (bool, string) {
				cond := nodeCondition(getNode(t, l, n.Name), corev1.NodeReady)
				return cond != nil && cond.Status == corev1.ConditionTrue && cond.LastHeartbeatTime.After(restarted.Add(time.Second)), fmt.Sprintf("%+v", cond)
			})
		}
		time.Sleep(3 * time.Second) // the network sync runs beside the first heartbeat
		if got := keepAliveGet(t, conn, rd, "/hostname"); got != "pn-3" {
			t.Errorf("request on the connection opened before the restart: %q", got)
		}
		if after := cniResults(t, l); after != before {
			t.Errorf("CNI results changed across the restart (a pod was wired again):\nbefore %s\nafter  %s", before, after)
		}
		podMatrix(t, l, pods)
	})

	t.Run("DeletedNodeLosesRoutes", func(t *testing.T) {
		gone := l.Nodes[2]
		if err := l.Stop("minilet-"+gone.Name, 10*time.Second); err != nil { // a node taken out of the cluster
			t.Fatal(err)
		}
		if out, err := cluster.Kubectl(ctx, l, "delete", "node", gone.Name); err != nil {
			t.Fatalf("delete node: %v\n%s", err, out)
		}
		for _, n := range l.Nodes[:2] {
			waitFor(t, n.Name+" forgetting "+gone.Name, 30*time.Second, func() (bool, string) {
				r := minletNetwork(t, l, n)
				for _, rt := range r.Routes {
					if rt.Dst == gone.PodCIDR {
						return false, fmt.Sprintf("route %+v", rt)
					}
				}
				if r.VXLAN != nil {
					for _, f := range r.VXLAN.FDB {
						if f.Dst == gone.IP {
							return false, fmt.Sprintf("FDB %+v", f)
						}
					}
					if len(r.VXLAN.Neighbours) != 1 {
						return false, fmt.Sprintf("neighbours %+v", r.VXLAN.Neighbours)
					}
				}
				return len(r.Routes) == 1, fmt.Sprintf("routes %+v", r.Routes)
			})
		}
	})
}

// TestPodNetworkHostGWAcrossRouter: host-gw cannot route to a node behind the router; the
// node says so in an Event and in NetworkUnavailable, and still routes to its own segment.
func TestPodNetworkHostGWAcrossRouter(t *testing.T) {
	l := upLabWith(t, "pn", cluster.Options{Nodes: 3, PodNetwork: "host-gw", Segments: 2})
	n1, n2, n3 := l.Nodes[0], l.Nodes[1], l.Nodes[2]
	waitFor(t, "a FailedToCreateRoute event about "+n2.Name, 60*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(context.Background(), l, "get", "events", "-A", "--field-selector", "reason=FailedToCreateRoute,involvedObject.name="+n1.Name,
			"-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
		return err == nil && strings.Contains(out, n2.PodCIDR) && strings.Contains(out, "not on a directly connected network"), out
	})
	cond := nodeCondition(getNode(t, l, n1.Name), corev1.NodeNetworkUnavailable)
	if cond == nil || cond.Status != corev1.ConditionTrue || !strings.Contains(cond.Message, n2.Name) {
		t.Errorf("node-1 NetworkUnavailable = %+v, want True naming %s", cond, n2.Name)
	}
	r := minletNetwork(t, l, n1)
	if len(r.Routes) != 1 || r.Routes[0].Dst != n3.PodCIDR || r.Routes[0].Via != n3.IP {
		t.Errorf("node-1 routes %+v, want only %s via %s (same segment)", r.Routes, n3.PodCIDR, n3.IP)
	}
}

// podNetNS is where pod pod of lab node i has its network namespace.
func podNetNS(l *lab.Lab, i int, pod *corev1.Pod) string {
	return filepath.Join(l.Nodes[i].RunDir, "netns", string(pod.UID))
}

// podMatrix: every pn pod reaches every pn pod by IP, and is seen with its own IP.
func podMatrix(t *testing.T, l *lab.Lab, pods map[string]*corev1.Pod) {
	t.Helper()
	for i := range l.Nodes {
		src := pods[fmt.Sprintf("pn-%d", i+1)]
		for j := range l.Nodes {
			dst := pods[fmt.Sprintf("pn-%d", j+1)]
			got, err := httpGetIn(podNetNS(l, i, src), "http://"+dst.Status.PodIP+":8080/clientip")
			if err != nil || !strings.HasPrefix(got, src.Status.PodIP+":") {
				t.Errorf("%s → %s (%s) /clientip = %q, %v; want %s's own IP %s (no NAT)", src.Name, dst.Name, dst.Status.PodIP, got, err, src.Name, src.Status.PodIP)
			}
		}
	}
}

func getNode(t *testing.T, l *lab.Lab, name string) *corev1.Node {
	t.Helper()
	var node corev1.Node
	kubectlJSON(t, l, &node, "get", "node", name)
	return &node
}

func nodeCondition(node *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	_, c := nodeutil.GetNodeCondition(&node.Status, typ)
	return c
}

// minletNetwork is `minilet network -o json` run in node n's namespace.
func minletNetwork(t *testing.T, l *lab.Lab, n lab.Node) *inspect.Report {
	t.Helper()
	bin := filepath.Join(testenv.RequireBuilt(t).BinDir, "minilet")
	out, err := lab.Command(context.Background(), n.NetNS, bin, "network", "--root-dir", n.RunDir, "-o", "json").Output()
	if err != nil {
		t.Fatalf("minilet network on %s: %v", n.Name, err)
	}
	var r inspect.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("minilet network -o json on %s: %v\n%s", n.Name, err, out)
	}
	return &r
}

// remoteAddrSeen connects from the namespace at from to a listener on ip in lab namespace
// netns and returns the source address the listener saw.
func remoteAddrSeen(t *testing.T, netns, ip, from string) string {
	t.Helper()
	var ln net.Listener
	if err := network.InNetNS(lab.NetNSPath(netns), func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(ip, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			seen <- err.Error()
			return
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		c.Close()
		seen <- host
	}()
	conn := dialIn(t, from, ln.Addr().String())
	conn.Close()
	select {
	case got := <-seen:
		return got
	case <-time.After(5 * time.Second):
		return "nothing accepted"
	}
}

func dialIn(t *testing.T, netnsPath, addr string) net.Conn {
	t.Helper()
	var conn net.Conn
	if err := network.InNetNS(netnsPath, func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, 3*time.Second)
		return err
	}); err != nil {
		t.Fatalf("connect to %s from %s: %v", addr, netnsPath, err)
	}
	return conn
}

// keepAliveGet sends one HTTP request on an open connection and returns the body.
func keepAliveGet(t *testing.T, conn net.Conn, rd *bufio.Reader, path string) string {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req, _ := http.NewRequest(http.MethodGet, "http://pod"+path, nil)
	if err := req.Write(conn); err != nil {
		return "write: " + err.Error()
	}
	resp, err := http.ReadResponse(rd, req)
	if err != nil {
		return "read: " + err.Error()
	}
	defer resp.Body.Close()
	var body strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
	return body.String()
}

// cniResults lists every node's cached CNI results with their modification times: a pod
// wired again would change them.
func cniResults(t *testing.T, l *lab.Lab) string {
	t.Helper()
	var out []string
	for _, n := range l.Nodes {
		files, _ := filepath.Glob(filepath.Join(n.RunDir, "cni", "cache", "results", "*"))
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s@%d", filepath.Base(f), fi.ModTime().UnixNano()))
		}
	}
	return strings.Join(out, " ")
}
