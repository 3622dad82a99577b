package lab

import (
	"fmt"
	"os"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/vishvananda/netlink"
)

// Uplink is a lab's way out that stays wholly inside the lab: a router namespace on
// segment 0 and, behind it, an "internet" namespace on the documentation range
// 203.0.113.0/24 (RFC 5737), routed nowhere but back into the lab. Nodes route only that
// range to the router, never a default route, so nothing can reach a real network.
type Uplink struct {
	RouterNetNS string `json:"routerNetns"` // mk-NAME-up
	RouterIP    string `json:"routerIP"`    // its address on segment 0
	NetNS       string `json:"netns"`       // mk-NAME-inet, the "internet" host
	IP          string `json:"ip"`          // the internet host's address
	Subnet      string `json:"subnet"`
}

// Uplink addressing.
const (
	UplinkRouterIP    = "10.200.0.4"
	UplinkSubnet      = "203.0.113.0/24"
	UplinkGatewayIP   = "203.0.113.1" // the router's side of the internet
	UplinkHostIP      = "203.0.113.10"
	uplinkRouterIface = "eth1"
)

// buildUplink cables the uplink router to segment 0 and to the internet namespace, turns
// on forwarding in the router, routes the internet's replies back into the lab and the
// uplink range from every node on segment 0 through the router.
func (l *Lab) buildUplink(sw *namespace, br netlink.Link) error {
	u := l.Uplink
	if err := l.plugIn(sw, l.Switches[0], br, Member{Name: "up", NetNS: u.RouterNetNS, IP: u.RouterIP}, MemberInterface); err != nil {
		return err
	}
	rt, err := openNamespace(u.RouterNetNS)
	if err != nil {
		return err
	}
	defer rt.close()
	inet, err := newNamespace(u.NetNS)
	if err != nil {
		return err
	}
	defer inet.close()
	if err := rt.h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: uplinkRouterIface}, PeerName: MemberInterface, PeerNamespace: netlink.NsFd(inet.fd)}); err != nil {
		return fmt.Errorf("cable %s to %s: %w", u.NetNS, u.RouterNetNS, err)
	}
	for _, end := range []struct {
		ns      *namespace
		name    string
		iface   string
		address string
	}{{rt, u.RouterNetNS, uplinkRouterIface, UplinkGatewayIP}, {inet, u.NetNS, MemberInterface, u.IP}} {
		link, err := end.ns.h.LinkByName(end.iface)
		if err != nil {
			return fmt.Errorf("find %s in %s: %w", end.iface, end.name, err)
		}
		addr, _ := netlink.ParseAddr(end.address + "/24")
		if err := end.ns.h.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("address %s in %s: %w", addr, end.name, err)
		}
		if err := end.ns.h.LinkSetUp(link); err != nil {
			return fmt.Errorf("bring up %s in %s: %w", end.iface, end.name, err)
		}
	}
	if err := network.InNetNS(NetNSPath(u.RouterNetNS), func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	}); err != nil {
		return fmt.Errorf("enable IP forwarding in %s: %w", u.RouterNetNS, err)
	}
	// The internet answers the lab (nodes' addresses, LoadBalancer addresses) through the router.
	if err := network.InNetNS(NetNSPath(u.NetNS), func() error { return routeVia("10.200.0.0/16", UplinkGatewayIP) }); err != nil {
		return fmt.Errorf("route back into the lab from %s: %w", u.NetNS, err)
	}
	members := []string{l.ControlPlane.NetNS}
	if l.Client != nil {
		members = append(members, l.Client.NetNS)
	}
	for _, n := range l.Nodes {
		members = append(members, n.NetNS)
	}
	for _, ns := range members {
		if err := network.InNetNS(NetNSPath(ns), func() error { return routeVia(u.Subnet, u.RouterIP) }); err != nil {
			return fmt.Errorf("route %s from %s: %w", u.Subnet, ns, err)
		}
	}
	return nil
}
