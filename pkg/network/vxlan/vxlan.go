// Package vxlan keeps a node's VXLAN overlay as flannel's vxlan backend lays it out: one
// device (VNI 1, UDP 8472, MTU 50 below the uplink's) carrying the node's pod CIDR's network
// address, and for every other node a permanent neighbour entry (that node's VTEP address
// -> its VTEP MAC), a forwarding entry (VTEP MAC -> that node's IP) and an onlink route of
// its pod CIDR via its VTEP address. Learning is off: minilet writes every entry from the
// Node objects, so nodes behind routers (on other L2 segments) are reached too.
package vxlan

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/minik8s/minik8s/pkg/network"
)

// The overlay's settings, flannel's defaults.
const (
	DeviceName = "minik8s.1" // .VNI, as flannel.1
	VNI        = 1
	Port       = 8472 // Linux's historical VXLAN port, as flannel
	Overhead   = 50   // outer IPv4 + UDP + VXLAN + inner Ethernet headers
)

// Peer is another node as the overlay sees it.
type Peer struct {
	Node    string
	PodCIDR *net.IPNet
	NodeIP  net.IP           // where its VXLAN packets go (the outer destination)
	MAC     net.HardwareAddr // its device's MAC
}

// Device is this node's overlay device.
type Device struct {
	link *netlink.Vxlan
}

// MAC derives a node's VTEP MAC from its IP, so a device made again after a reboot keeps the
// MAC other nodes have in their tables: locally administered, unicast, 0e:4b:IP.
func MAC(nodeIP net.IP) net.HardwareAddr {
	ip4 := nodeIP.To4()
	return net.HardwareAddr{0x0e, 0x4b, ip4[0], ip4[1], ip4[2], ip4[3]}
}

// Ensure makes (or adopts) the overlay device in the current network namespace for a node
// at nodeIP owning podCIDR: bound to the uplink holding nodeIP, up, with podCIDR's network
// address as its /32. A device of that name with other settings is made again.
func Ensure(nodeIP net.IP, podCIDR *net.IPNet) (*Device, error) {
	if nodeIP.To4() == nil || podCIDR.IP.To4() == nil {
		return nil, fmt.Errorf("vxlan: IPv4 node IP and pod CIDR needed, got %v and %v", nodeIP, podCIDR)
	}
	uplink, err := linkWithAddr(nodeIP)
	if err != nil {
		return nil, err
	}
	want := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: DeviceName, MTU: uplink.Attrs().MTU - Overhead, HardwareAddr: MAC(nodeIP)},
		VxlanId:   VNI, VtepDevIndex: uplink.Attrs().Index, SrcAddr: nodeIP.To4(), Port: Port,
		Learning: false,
	}
	if l, err := netlink.LinkByName(DeviceName); err == nil {
		if v, ok := l.(*netlink.Vxlan); ok && v.VxlanId == VNI && v.Port == Port && v.SrcAddr.Equal(nodeIP) &&
			v.VtepDevIndex == uplink.Attrs().Index && bytes.Equal(v.HardwareAddr, want.HardwareAddr) && v.MTU == want.MTU {
			want = v
		} else if err := netlink.LinkDel(l); err != nil {
			return nil, fmt.Errorf("remove %s with other settings: %w", DeviceName, err)
		}
	}
	if want.Index == 0 {
		if err := netlink.LinkAdd(want); err != nil {
			return nil, fmt.Errorf("create VXLAN device %s (VNI %d, port %d) on %s: %w", DeviceName, VNI, Port, uplink.Attrs().Name, err)
		}
		l, err := netlink.LinkByName(DeviceName)
		if err != nil {
			return nil, fmt.Errorf("find %s: %w", DeviceName, err)
		}
		want = l.(*netlink.Vxlan)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: podCIDR.IP, Mask: net.CIDRMask(32, 32)}}
	if err := netlink.AddrReplace(want, addr); err != nil {
		return nil, fmt.Errorf("address %s on %s: %w", addr, DeviceName, err)
	}
	addrs, err := netlink.AddrList(want, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", DeviceName, err)
	}
	for _, a := range addrs {
		if !a.IP.Equal(podCIDR.IP) {
			if err := netlink.AddrDel(want, &a); err != nil {
				return nil, fmt.Errorf("remove old address %s from %s: %w", a.IPNet, DeviceName, err)
			}
		}
	}
	if err := netlink.LinkSetUp(want); err != nil {
		return nil, fmt.Errorf("bring up %s: %w", DeviceName, err)
	}
	return &Device{link: want}, nil
}

// UplinkMTU is the MTU of the link holding nodeIP.
func UplinkMTU(nodeIP net.IP) (int, error) {
	l, err := linkWithAddr(nodeIP)
	if err != nil {
		return 0, err
	}
	return l.Attrs().MTU, nil
}

func linkWithAddr(ip net.IP) (netlink.Link, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if a.IP.Equal(ip) {
			l, err := netlink.LinkByIndex(a.LinkIndex)
			if err != nil {
				return nil, fmt.Errorf("link of %s: %w", ip, err)
			}
			return l, nil
		}
	}
	return nil, fmt.Errorf("no interface holds the node IP %s (--node-ip)", ip)
}

// Remove deletes the overlay device (with it go its neighbour and forwarding entries and
// routes); a missing device is fine.
func Remove() error {
	l, err := netlink.LinkByName(DeviceName)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return nil
		}
		return fmt.Errorf("find %s: %w", DeviceName, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("remove %s: %w", DeviceName, err)
	}
	return nil
}

// Index is the device's interface index.
func (d *Device) Index() int { return d.link.Index }

// MTU is the device's MTU, the most a pod's packets may carry.
func (d *Device) MTU() int { return d.link.MTU }

// Routes are the pod routes the peers need: each pod CIDR onlink via its VTEP address.
func (d *Device) Routes(peers []Peer) []network.PodRoute {
	routes := make([]network.PodRoute, 0, len(peers))
	for _, p := range peers {
		routes = append(routes, network.PodRoute{Dst: p.PodCIDR, Gw: p.PodCIDR.IP, LinkIndex: d.link.Index, OnLink: true})
	}
	return routes
}

// SyncPeers makes the device's neighbour and forwarding entries exactly those of peers
// (entries of nodes gone are deleted). Failures are returned per node.
func (d *Device) SyncPeers(peers []Peer) map[string]error {
	failed := map[string]error{}
	wantNeigh, wantFDB := map[string]bool{}, map[string]bool{}
	for _, p := range peers {
		wantNeigh[p.PodCIDR.IP.String()+"/"+p.MAC.String()] = true
		wantFDB[p.MAC.String()+"/"+p.NodeIP.String()] = true
		// Neighbour first: the route's next hop must resolve to the peer's MAC.
		neigh := &netlink.Neigh{LinkIndex: d.link.Index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			Type: unix.RTN_UNICAST, IP: p.PodCIDR.IP, HardwareAddr: p.MAC}
		if err := netlink.NeighSet(neigh); err != nil {
			failed[p.Node] = fmt.Errorf("neighbour %s -> %s on %s: %w", p.PodCIDR.IP, p.MAC, DeviceName, err)
			continue
		}
		fdb := &netlink.Neigh{LinkIndex: d.link.Index, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT,
			Flags: netlink.NTF_SELF, IP: p.NodeIP, HardwareAddr: p.MAC}
		if err := netlink.NeighSet(fdb); err != nil {
			failed[p.Node] = fmt.Errorf("forwarding entry %s -> %s on %s: %w", p.MAC, p.NodeIP, DeviceName, err)
		}
	}
	neighs, fdbs, err := d.Entries()
	if err != nil {
		failed[""] = err
		return failed
	}
	for _, n := range neighs {
		if !wantNeigh[n.IP.String()+"/"+n.HardwareAddr.String()] {
			if err := netlink.NeighDel(&n); err != nil && !errors.Is(err, unix.ENOENT) {
				failed[""] = fmt.Errorf("delete stale neighbour %s: %w", n.IP, err)
			}
		}
	}
	for _, n := range fdbs {
		if !wantFDB[n.HardwareAddr.String()+"/"+n.IP.String()] {
			if err := netlink.NeighDel(&n); err != nil && !errors.Is(err, unix.ENOENT) {
				failed[""] = fmt.Errorf("delete stale forwarding entry %s: %w", n.HardwareAddr, err)
			}
		}
	}
	return failed
}

// Entries lists the device's permanent neighbour and forwarding entries.
func (d *Device) Entries() (neighs, fdbs []netlink.Neigh, err error) {
	return Entries(d.link.Index)
}

// Entries lists the permanent neighbour and forwarding entries of the device at index.
func Entries(index int) (neighs, fdbs []netlink.Neigh, err error) {
	all, err := netlink.NeighList(index, unix.AF_INET)
	if err != nil {
		return nil, nil, fmt.Errorf("list neighbours of %s: %w", DeviceName, err)
	}
	neighs = slices.DeleteFunc(all, func(n netlink.Neigh) bool { return n.State&netlink.NUD_PERMANENT == 0 })
	all, err = netlink.NeighList(index, unix.AF_BRIDGE)
	if err != nil {
		return nil, nil, fmt.Errorf("list forwarding entries of %s: %w", DeviceName, err)
	}
	fdbs = slices.DeleteFunc(all, func(n netlink.Neigh) bool { return n.IP == nil || n.State&netlink.NUD_PERMANENT == 0 })
	return neighs, fdbs, nil
}
