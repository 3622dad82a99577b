package network

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// onLink puts addr's subnet on-link in the current namespace: a veth pair v0/v1, both up,
// with addr on v0.
func onLink(addr string) error {
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v0"}, PeerName: "v1"}); err != nil {
		return err
	}
	v0, err := netlink.LinkByName("v0")
	if err != nil {
		return err
	}
	a, err := netlink.ParseAddr(addr)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(v0, a); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(v0); err != nil {
		return err
	}
	return setLinkUp("v1")
}

func TestSyncPodRoutes(t *testing.T) {
	requireRoot(t)
	node := newTestNetNS(t, netnsDir(t), "node")
	err := InNetNS(node, func() error {
		if err := onLink("10.200.9.1/24"); err != nil { // for the gateways
			return err
		}
		_, foreignDst, _ := net.ParseCIDR("10.244.9.0/24")
		foreign := &netlink.Route{Dst: foreignDst, Gw: net.ParseIP("10.200.9.9"), Protocol: unix.RTPROT_STATIC}
		if err := netlink.RouteAdd(foreign); err != nil {
			return err
		}

		if failed := SyncPodRoutes(hostGW(map[string]string{
			"10.244.2.0/24": "10.200.9.2",
			"10.244.3.0/24": "10.200.9.3",
		})); len(failed) > 0 {
			return fmt.Errorf("first sync: %v", failed)
		}
		checkRoutes(t, map[string]string{"10.244.2.0/24": "10.200.9.2", "10.244.3.0/24": "10.200.9.3"})

		// Node 2 moved, node 3 left; the foreign route must survive, also when asked for.
		failed := SyncPodRoutes(hostGW(map[string]string{
			"10.244.2.0/24": "10.200.9.4",
			"10.244.9.0/24": "10.200.9.5",
		}))
		if err := failed["10.244.9.0/24"]; len(failed) != 1 || err == nil || !strings.Contains(err.Error(), "something else") {
			t.Errorf("sync over a foreign route: failed = %v, want only 10.244.9.0/24", failed)
		}
		checkRoutes(t, map[string]string{"10.244.2.0/24": "10.200.9.4"})
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: foreignDst}, netlink.RT_FILTER_DST)
		if err != nil {
			return err
		}
		if len(routes) != 1 || !routes[0].Gw.Equal(foreign.Gw) || routes[0].Protocol != unix.RTPROT_STATIC {
			t.Errorf("foreign route changed: %v", routes)
		}

		// A next hop behind a router cannot carry host-gw routes; the rest goes on.
		_, beyond, _ := net.ParseCIDR("10.201.0.0/24")
		if err := netlink.RouteAdd(&netlink.Route{Dst: beyond, Gw: net.ParseIP("10.200.9.254")}); err != nil {
			return err
		}
		failed = SyncPodRoutes(hostGW(map[string]string{"10.244.2.0/24": "10.200.9.4", "10.244.5.0/24": "10.201.0.5"}))
		if err := failed["10.244.5.0/24"]; len(failed) != 1 || !errors.Is(err, ErrNextHopNotOnLink) {
			t.Errorf("next hop behind a router: failed = %v, want ErrNextHopNotOnLink for 10.244.5.0/24", failed)
		}
		checkRoutes(t, map[string]string{"10.244.2.0/24": "10.200.9.4"})

		if failed := SyncPodRoutes(nil); len(failed) > 0 {
			t.Errorf("empty sync: %v", failed)
		}
		checkRoutes(t, map[string]string{})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if failed := SyncPodRoutes(hostGW(map[string]string{"10.244.2.0/24": "fd00::1"})); len(failed) != 1 {
		t.Error("sync accepted an IPv6 gateway for an IPv4 CIDR")
	}
}

// checkRoutes compares the routes marked with RouteProtocol in the current namespace to want
// (destination → gateway). It runs inside InNetNS, off the test goroutine, so it never calls
// t.Fatal.
func checkRoutes(t *testing.T, want map[string]string) {
	t.Helper()
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Errorf("list routes: %v", err)
		return
	}
	got := map[string]string{}
	for _, r := range routes {
		got[r.Dst.String()] = r.Gw.String()
	}
	if len(got) != len(want) {
		t.Errorf("routes = %v, want %v", got, want)
	}
	for dst, gw := range want {
		if got[dst] != gw {
			t.Errorf("route to %s via %s, want via %s", dst, got[dst], gw)
		}
	}
}

func hostGW(routes map[string]string) []PodRoute {
	var out []PodRoute
	for cidr, gw := range routes {
		_, dst, _ := net.ParseCIDR(cidr)
		out = append(out, PodRoute{Dst: dst, Gw: net.ParseIP(gw)})
	}
	return out
}
