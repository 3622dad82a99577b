package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/nettest"
)

const hostNetworkPort = 18090

var hostNetworkPod = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  nodeName: node-1
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: netexec
    image: localhost/minik8s/netexec:v1
    args: [--http-port=%d, --udp-port=0, --grpc-port=0]
    ports: [{containerPort: %d}]
`, hostNetworkPort, hostNetworkPort)

// TestHostNetworkPodInTheLabNode: a hostNetwork pod on a lab node lives in that node's
// network namespace (minilet's), not in the host's where the lab's containerd runs. It
// answers on the node's lab address from inside the node namespace, is named after the
// node and reports the node's address as the caller's; the host namespace gets no listener
// on its port (read with ss, no traffic) and no link. It survives a minilet restart whose
// node-namespace mount was lost (a reboot's plain file), and deleting it leaves the node's
// interfaces alone (no CNI DEL in the node's namespace); down leaves nothing behind.
func TestHostNetworkPodInTheLabNode(t *testing.T) {
	hostLinks := linkNames(t)
	if hostListens(t, hostNetworkPort) {
		t.Fatalf("something on the host listens on port %d already; the test cannot tell it from the pod (stop it and run again)", hostNetworkPort)
	}
	l := upLab(t, "e2e-hostnet", 1)
	node := l.Nodes[0]
	nodeNS := lab.NetNSPath(node.NetNS)
	nodeLinks := linksIn(t, nodeNS)

	applyYAML(t, l, hostNetworkPod)
	pod := waitRunning(t, l, "hostnet")
	if pod.Status.PodIP != node.IP {
		t.Errorf("pod IP %s, want the node's %s", pod.Status.PodIP, node.IP)
	}
	base := fmt.Sprintf("http://%s:%d", node.IP, hostNetworkPort)
	if got, err := getEventually(nodeNS, base+"/hostname", 30*time.Second); err != nil || got != node.Name {
		t.Errorf("/hostname from the node namespace = %q, %v; want %s", got, err, node.Name)
	}
	// A connection from the node's own address to itself: the pod sees the node's address.
	if got, err := httpGetIn(nodeNS, base+"/clientip"); err != nil || !strings.HasPrefix(got, node.IP+":") {
		t.Errorf("/clientip from the node namespace = %q, %v; want the node's %s", got, err, node.IP)
	}
	if out := ssListening(t, nodeNS, hostNetworkPort); !strings.Contains(out, fmt.Sprintf(":%d", hostNetworkPort)) {
		t.Errorf("no listener on port %d in the node namespace:\n%s", hostNetworkPort, out)
	}
	if hostListens(t, hostNetworkPort) {
		t.Errorf("the hostNetwork pod listens on port %d in the HOST's namespace", hostNetworkPort)
	}
	if after := linkNames(t); !slices.Equal(after, hostLinks) {
		t.Errorf("host links changed: before %v, after %v", hostLinks, after)
	}

	// minilet restarts after its bind mount of the node namespace was lost.
	bound := filepath.Join(node.RunDir, "nodens", "net")
	if !network.IsNetNS(bound) || !nettest.SameNamespace(t, bound, nodeNS) {
		t.Fatalf("%s is not a bind mount of the node namespace %s", bound, nodeNS)
	}
	var minilet lab.Process
	for _, r := range l.Processes {
		if r.Name == "minilet-"+node.Name {
			minilet = lab.Process{Name: r.Name, NetNS: r.NetNS, Args: r.Args, Cgroup: r.Cgroup}
		}
	}
	if err := l.Stop(minilet.Name, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Unmount(bound, syscall.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if network.IsNetNS(bound) {
		t.Fatal("still a namespace after the unmount")
	}
	if _, err := l.Start(minilet); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node namespace bound again", 30*time.Second, func() (bool, string) {
		return network.IsNetNS(bound) && nettest.SameNamespace(t, bound, nodeNS), bound
	})
	// The pod from before the restart is left alone; a new one joins the new mount.
	if got, err := getEventually(nodeNS, base+"/hostname", 30*time.Second); err != nil || got != node.Name {
		t.Errorf("after the restart /hostname = %q, %v; want %s", got, err, node.Name)
	}
	mustKubectl(t, l, "delete", "pod", "hostnet", "--timeout=60s")
	applyYAML(t, l, strings.Replace(hostNetworkPod, "name: hostnet", "name: hostnet2", 1))
	waitRunning(t, l, "hostnet2")
	if got, err := getEventually(nodeNS, base+"/hostname", 30*time.Second); err != nil || got != node.Name {
		t.Errorf("new pod after the restart: /hostname = %q, %v; want %s", got, err, node.Name)
	}
	if hostListens(t, hostNetworkPort) {
		t.Errorf("after the restart a hostNetwork pod listens on port %d in the HOST's namespace", hostNetworkPort)
	}

	mustKubectl(t, l, "delete", "pod", "hostnet2", "--timeout=60s")
	if after := linksIn(t, nodeNS); !slices.Equal(after, nodeLinks) {
		t.Errorf("node links changed by the hostNetwork pods: before %v, after %v", nodeLinks, after)
	}
	if out := ssListening(t, nodeNS, hostNetworkPort); strings.Contains(out, fmt.Sprintf(":%d", hostNetworkPort)) {
		t.Errorf("port %d still listened on in the node namespace after the deletion:\n%s", hostNetworkPort, out)
	}

	// Down leaves no mount behind, the node namespace's bind mount included.
	if err := cluster.Down(context.Background(), l.Name); err != nil {
		t.Fatalf("minilab down: %v", err)
	}
	assertNothingLeft(t, l, hostLinks)
}

// hostListens tells whether a TCP socket listens on port in the host's network namespace
// (the test's own), as `ss -ltn` there shows.
func hostListens(t *testing.T, port int) bool {
	t.Helper()
	out, err := exec.Command("ss", "-Hltn", fmt.Sprintf("sport = :%d", port)).CombinedOutput()
	if err != nil {
		t.Fatalf("ss in the host namespace: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out)) != ""
}

// ssListening lists the TCP listeners on port inside the namespace at netnsPath.
func ssListening(t *testing.T, netnsPath string, port int) string {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+netnsPath, "ss", "-Hltn", fmt.Sprintf("sport = :%d", port)).CombinedOutput()
	if err != nil {
		t.Fatalf("ss in %s: %v\n%s", netnsPath, err, out)
	}
	return string(out)
}

// linksIn lists the names of the links in the namespace at netnsPath.
func linksIn(t *testing.T, netnsPath string) []string {
	t.Helper()
	var names []string
	err := network.InNetNS(netnsPath, func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			names = append(names, l.Attrs().Name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
