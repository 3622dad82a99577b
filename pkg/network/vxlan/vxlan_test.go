package vxlan

import (
	"fmt"
	"net"
	"os/exec"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/nettest"
)

// TestOverlay: two "nodes" on one veth; each gets the device and the other as its peer; a
// pod-CIDR address on one answers pings from the other through the overlay. Dropping the
// peer removes its route, neighbour and forwarding entries.
func TestOverlay(t *testing.T) {
	ns := nettest.NetNS(t, "n1", "n2")
	testenv.RequireTools(t, "busybox")
	fd, err := netns.GetFromPath(ns[1])
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	ips := []string{"10.200.9.1", "10.200.9.2"}
	cidrs := []string{"10.244.1.0/24", "10.244.2.0/24"}
	nettest.In(t, ns[0], func() error {
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0", MTU: 1500}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)})
	})
	devs := make([]*Device, 2)
	for i := range ns {
		nettest.In(t, ns[i], func() error {
			eth0, err := netlink.LinkByName("eth0")
			if err != nil {
				return err
			}
			addr, _ := netlink.ParseAddr(ips[i] + "/24")
			if err := netlink.AddrAdd(eth0, addr); err != nil {
				return err
			}
			if err := netlink.LinkSetUp(eth0); err != nil {
				return err
			}
			_, cidr, _ := net.ParseCIDR(cidrs[i])
			if devs[i], err = Ensure(net.ParseIP(ips[i]), cidr); err != nil {
				return err
			}
			// A pod address behind the device, as cni0 would hold it.
			lo, _ := netlink.LinkByName("lo")
			podAddr, _ := netlink.ParseAddr(fmt.Sprintf("10.244.%d.1/32", i+1))
			return netlink.AddrAdd(lo, podAddr)
		})
		if devs[i].MTU() != 1450 {
			t.Errorf("device MTU %d, want 1500 - 50", devs[i].MTU())
		}
	}
	peer := func(i int) Peer {
		_, cidr, _ := net.ParseCIDR(cidrs[i])
		return Peer{Node: fmt.Sprint("node-", i+1), PodCIDR: cidr, NodeIP: net.ParseIP(ips[i]), MAC: MAC(net.ParseIP(ips[i]))}
	}
	for i := range ns {
		other := peer(1 - i)
		nettest.In(t, ns[i], func() error {
			if failed := devs[i].SyncPeers([]Peer{other}); len(failed) > 0 {
				return fmt.Errorf("sync peers: %v", failed)
			}
			if failed := network.SyncPodRoutes(devs[i].Routes([]Peer{other})); len(failed) > 0 {
				return fmt.Errorf("sync routes: %v", failed)
			}
			return nil
		})
	}
	if out, err := exec.Command("nsenter", "--net="+ns[0], "busybox", "ping", "-c", "1", "-W", "2", "-I", "10.244.1.1", "10.244.2.1").CombinedOutput(); err != nil {
		t.Errorf("ping across the overlay: %v\n%s", err, out)
	}
	// Ensure again adopts the device as it is (same MAC).
	nettest.In(t, ns[0], func() error {
		_, cidr, _ := net.ParseCIDR(cidrs[0])
		d, err := Ensure(net.ParseIP(ips[0]), cidr)
		if err == nil && d.Index() != devs[0].Index() {
			t.Errorf("Ensure made the device again (index %d, was %d)", d.Index(), devs[0].Index())
		}
		return err
	})

	nettest.In(t, ns[0], func() error {
		if failed := devs[0].SyncPeers(nil); len(failed) > 0 {
			return fmt.Errorf("sync no peers: %v", failed)
		}
		if failed := network.SyncPodRoutes(nil); len(failed) > 0 {
			return fmt.Errorf("sync no routes: %v", failed)
		}
		neighs, fdbs, err := devs[0].Entries()
		if err != nil {
			return err
		}
		if len(neighs) != 0 || len(fdbs) != 0 {
			t.Errorf("entries of a gone peer left: neighbours %v, fdb %v", neighs, fdbs)
		}
		routes, err := network.OwnedRoutes()
		if err == nil && len(routes) != 0 {
			t.Errorf("routes of a gone peer left: %v", routes)
		}
		return err
	})
}
