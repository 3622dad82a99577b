package nodenet

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/vishvananda/netlink"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/nettest"
)

func node(name, ip, cidr string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{PodCIDR: cidr},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}},
	}
}

// TestHostGWSync plays node-1 in a namespace of its own: it routes to node-2, refuses the
// overlapping node-3 and the unreachable node-4 with Events and NetworkUnavailable=True,
// publishes its mode, and drops node-2's route once node-2 is deleted.
func TestHostGWSync(t *testing.T) {
	ns := nettest.NetNS(t, "node-1")[0]
	testenv.RequireTools(t, "iptables", "ipset")
	nettest.In(t, ns, func() error {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer"}); err != nil {
			return err
		}
		eth0, _ := netlink.LinkByName("eth0")
		addr, _ := netlink.ParseAddr("10.200.9.1/24")
		if err := netlink.AddrAdd(eth0, addr); err != nil {
			return err
		}
		for _, l := range []string{"eth0", "peer"} {
			link, _ := netlink.LinkByName(l)
			if err := netlink.LinkSetUp(link); err != nil {
				return err
			}
		}
		_, beyond, _ := net.ParseCIDR("10.201.0.0/24")
		return netlink.RouteAdd(&netlink.Route{Dst: beyond, Gw: net.ParseIP("10.200.9.254")})
	})
	nodes := []*corev1.Node{
		node("node-1", "10.200.9.1", "10.244.1.0/24"),
		node("node-2", "10.200.9.2", "10.244.2.0/24"),
		node("node-3", "10.200.9.3", "10.244.2.128/25"),
		node("node-4", "10.201.0.4", "10.244.4.0/24"),
	}
	client := fake.NewClientset(nodes[0], nodes[1], nodes[2], nodes[3])
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		_ = indexer.Add(n)
	}
	rec := record.NewFakeRecorder(10)
	_, own, _ := net.ParseCIDR("10.244.1.0/24")
	var n *Node
	nettest.In(t, ns, func() (err error) {
		n, err = Prepare(Config{NodeName: "node-1", NodeIP: net.ParseIP("10.200.9.1"), PodCIDR: own, Mode: ModeHostGW, Bridge: "cni0"})
		return err
	})
	ctx := context.Background()
	sync := func() {
		t.Helper()
		nettest.In(t, ns, func() error { return n.sync(ctx, client, corelisters.NewNodeLister(indexer), rec) })
	}
	sync()
	routes := ownedRoutes(t, ns)
	if len(routes) != 1 || routes[0] != "10.244.2.0/24 via 10.200.9.2" {
		t.Errorf("routes %v, want only node-2's", routes)
	}
	events := drain(rec)
	if !strings.Contains(events, "PodCIDROverlap") || !strings.Contains(events, "node-3") ||
		!strings.Contains(events, "FailedToCreateRoute") || !strings.Contains(events, "node-4") || !strings.Contains(events, "vxlan") {
		t.Errorf("events %q, want PodCIDROverlap about node-3 and FailedToCreateRoute about node-4", events)
	}
	sync() // the same problems are not reported again
	if again := drain(rec); again != "" {
		t.Errorf("problems reported twice: %q", again)
	}
	self, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if self.Annotations[AnnotationPodNetwork] != ModeHostGW {
		t.Errorf("annotations %v, want %s=%s", self.Annotations, AnnotationPodNetwork, ModeHostGW)
	}
	if len(self.Status.Conditions) != 1 || self.Status.Conditions[0].Status != corev1.ConditionTrue || !strings.Contains(self.Status.Conditions[0].Message, "node-4") {
		t.Errorf("conditions %+v, want NetworkUnavailable True naming node-4", self.Status.Conditions)
	}

	_ = indexer.Delete(nodes[1])
	_ = indexer.Delete(nodes[2])
	_ = indexer.Delete(nodes[3])
	if err := indexer.Update(self); err != nil {
		t.Fatal(err)
	}
	sync()
	if routes := ownedRoutes(t, ns); len(routes) != 0 {
		t.Errorf("routes of deleted nodes left: %v", routes)
	}
	self, _ = client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if len(self.Status.Conditions) != 1 || self.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Errorf("conditions %+v, want NetworkUnavailable False", self.Status.Conditions)
	}

	// Cleanup takes minilet's chains and set away and leaves the rest.
	_ = indexer.Add(nodes[1])
	sync()
	nettest.In(t, ns, Cleanup)
	if routes := ownedRoutes(t, ns); len(routes) != 0 {
		t.Errorf("routes left after Cleanup: %v", routes)
	}
	if out, _ := exec.Command("nsenter", "--net="+ns, "sh", "-c", "iptables-save; ipset list -n").CombinedOutput(); strings.Contains(string(out), "MINIK8S") {
		t.Errorf("rules left after Cleanup:\n%s", out)
	}
}

// TestPrepareRefusesAnOccupiedBridge: a cni0 holding another address stops minilet before
// it changes anything (forwarding stays off).
func TestPrepareRefusesAnOccupiedBridge(t *testing.T) {
	ns := nettest.NetNS(t, "node")[0]
	_, own, _ := net.ParseCIDR("10.244.1.0/24")
	nettest.In(t, ns, func() error {
		// A new namespace inherits the host's IPv4 settings (net.core.devconf_inherit_init_net=0
		// means "inherit" for IPv4), so a host with forwarding on starts this one with it on too.
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("0"), 0o644); err != nil {
			return err
		}
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "cni0"}}); err != nil {
			return err
		}
		br, _ := netlink.LinkByName("cni0")
		addr, _ := netlink.ParseAddr("10.88.0.1/16")
		if err := netlink.AddrAdd(br, addr); err != nil {
			return err
		}
		_, err := Prepare(Config{NodeName: "n", NodeIP: net.ParseIP("10.200.9.1"), PodCIDR: own, Mode: ModeVXLAN, Bridge: "cni0"})
		if err == nil || !strings.Contains(err.Error(), "10.88.0.1/16") || !strings.Contains(err.Error(), "10.244.1.1/24") {
			t.Errorf("Prepare over an occupied cni0: %v, want an error naming both addresses", err)
		}
		fwd, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
		if strings.TrimSpace(string(fwd)) != "0" {
			t.Errorf("ip_forward = %s after a refused Prepare, want it untouched", fwd)
		}
		if _, err := netlink.LinkByName("minik8s.1"); err == nil {
			t.Error("VXLAN device made after a refused Prepare")
		}
		return nil
	})
	if err := ValidateMode("calico"); err == nil {
		t.Error("ValidateMode accepted calico")
	}
}

func ownedRoutes(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	nettest.In(t, ns, func() error {
		routes, err := network.OwnedRoutes()
		for _, r := range routes {
			out = append(out, r.Dst.String()+" via "+r.Gw.String())
		}
		return err
	})
	return out
}

func drain(rec *record.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}
