package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Create builds the lab's namespaces, cabling, addresses and routes, makes its directories
// and writes lab.json. When any step fails it destroys what it made.
func Create(spec Spec) (*Lab, error) {
	if err := ValidateName(spec.Name); err != nil {
		return nil, err
	}
	if spec.Nodes < 1 || spec.Nodes > MaxNodes {
		return nil, fmt.Errorf("lab %q: %d nodes requested, want 1 to %d", spec.Name, spec.Nodes, MaxNodes)
	}
	if spec.Uplink && spec.Segments > 1 {
		return nil, fmt.Errorf("lab %q: an uplink needs one segment, not %d", spec.Name, spec.Segments)
	}
	if spec.ControlPlanes < 0 || spec.ControlPlanes > MaxControlPlanes {
		return nil, fmt.Errorf("lab %q: %d control planes requested, want 1 to %d", spec.Name, spec.ControlPlanes, MaxControlPlanes)
	}
	if spec.Segments < 0 || spec.Segments > MaxSegments {
		return nil, fmt.Errorf("lab %q: %d segments requested, want 1 to %d", spec.Name, spec.Segments, MaxSegments)
	}
	leftovers, err := labNetNS(spec.Name)
	if err != nil {
		return nil, err
	}
	if len(leftovers) > 0 {
		return nil, fmt.Errorf("lab %q: namespaces %v are left from an earlier run; destroy the lab first (minilab down --name %s)", spec.Name, leftovers, spec.Name)
	}
	l := describe(spec)
	if err := os.MkdirAll(StateRoot, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", StateRoot, err)
	}
	// Making the state directory is the lock that keeps two Creates of one name apart.
	if err := os.Mkdir(l.StateDir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lab %q already exists (%s); destroy it first (minilab down --name %s)", spec.Name, l.StateDir, spec.Name)
		}
		return nil, fmt.Errorf("create lab %q: %w", spec.Name, err)
	}
	if err := l.build(); err != nil {
		if derr := Destroy(spec.Name); derr != nil {
			err = errors.Join(err, fmt.Errorf("clean up the half-built lab: %w", derr))
		}
		return nil, fmt.Errorf("create lab %q: %w", spec.Name, err)
	}
	return l, nil
}

func (l *Lab) build() error {
	dirs := []string{l.RunDir, logDir(l)}
	for _, n := range l.Nodes {
		dirs = append(dirs, n.ManifestDir, n.RunDir)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	// Recorded first, so Destroy after a crash in the middle finds the lab.
	if err := l.save(); err != nil {
		return err
	}
	if err := l.writeResolverFiles(); err != nil {
		return err
	}

	// One switch per segment: a namespace holding bridge br0.
	var switches []*namespace
	defer func() {
		for _, sw := range switches {
			sw.close()
		}
	}()
	var bridges []netlink.Link
	for _, name := range l.Switches {
		sw, err := newNamespace(name)
		if err != nil {
			return err
		}
		switches = append(switches, sw)
		if err := sw.h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}}); err != nil {
			return fmt.Errorf("create bridge %s in %s: %w", BridgeName, name, err)
		}
		br, err := sw.h.LinkByName(BridgeName)
		if err == nil {
			err = sw.h.LinkSetUp(br)
		}
		if err != nil {
			return fmt.Errorf("bring up bridge %s in %s: %w", BridgeName, name, err)
		}
		bridges = append(bridges, br)
	}

	members := append([]Member{l.ControlPlane}, l.ControlPlanes...)
	segment := map[string]int{l.ControlPlane.Name: 0}
	for _, n := range l.Nodes {
		members = append(members, Member{Name: n.Name, NetNS: n.NetNS, IP: n.IP})
		segment[n.Name] = n.Segment
	}
	if l.Client != nil {
		members = append(members, *l.Client)
		segment[l.Client.Name] = 0
	}
	for _, m := range members {
		s := segment[m.Name]
		if err := l.plugIn(switches[s], l.Switches[s], bridges[s], m, MemberInterface); err != nil {
			return err
		}
	}
	if l.Router != nil {
		if err := l.buildRouter(switches, bridges); err != nil {
			return err
		}
	}
	if l.Uplink != nil {
		if err := l.buildUplink(switches[0], bridges[0]); err != nil {
			return err
		}
	}

	// Pod CIDRs between nodes are routed by minilet (--pod-network), not by the lab. Members
	// reach the other segments through the router; nodes route the Service range onto their
	// segment; the control plane routes pods as a host-gw node would (routeNodePods).
	for _, m := range members {
		isNode := slices.ContainsFunc(l.Nodes, func(n Node) bool { return n.Name == m.Name })
		s := segment[m.Name]
		err := network.InNetNS(NetNSPath(m.NetNS), func() error {
			if l.Router != nil {
				for other := range l.Switches {
					if other != s {
						if err := routeVia(fmt.Sprintf("10.200.%d.0/24", other), l.Router.IPs[s]); err != nil {
							return err
						}
					}
				}
			}
			if isNode {
				return routeServiceCIDR(l.ServiceCIDR)
			}
			if m.Name == l.ControlPlane.Name || slices.Contains(l.ControlPlanes, m) {
				return l.routeNodePods(0)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("set up routing in %s: %w", m.NetNS, err)
		}
	}
	return nil
}

// buildRouter cables the router namespace to every segment's switch (eth<SEG> at
// 10.200.SEG.1) and turns on forwarding in it, so lab segments reach each other through it
// and nowhere else.
func (l *Lab) buildRouter(switches []*namespace, bridges []netlink.Link) error {
	for s := range l.Switches {
		m := Member{Name: "rt", NetNS: l.Router.NetNS, IP: l.Router.IPs[s]}
		if err := l.plugIn(switches[s], l.Switches[s], bridges[s], m, fmt.Sprintf("eth%d", s)); err != nil {
			return err
		}
	}
	return network.InNetNS(NetNSPath(l.Router.NetNS), func() error {
		// /proc/sys/net shows the namespace of the thread that opens it.
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
			return fmt.Errorf("enable IP forwarding in %s: %w", l.Router.NetNS, err)
		}
		return l.routeNodePods(-1)
	})
}

// routeNodePods routes every node's pod CIDR via the node, in the namespace of a member on
// segment seg (-1: the router, on every segment): miniapi dials pods (pods/proxy,
// services/proxy) from the control plane, as kube-apiserver does from its host. A node on
// another segment is reached through the router, which routes its pods on.
func (l *Lab) routeNodePods(seg int) error {
	for _, n := range l.Nodes {
		gw := n.IP
		if seg >= 0 && n.Segment != seg {
			gw = l.Router.IPs[seg]
		}
		if err := routeVia(n.PodCIDR, gw); err != nil {
			return err
		}
	}
	return nil
}

// routeVia routes cidr through gw (another lab segment through the router).
func routeVia(cidr, gw string) error {
	_, dst, err := net.ParseCIDR(cidr)
	if err != nil {
		return err
	}
	if err := netlink.RouteReplace(&netlink.Route{Dst: dst, Gw: net.ParseIP(gw)}); err != nil {
		return fmt.Errorf("route %s via %s: %w", cidr, gw, err)
	}
	return nil
}

// plugIn cables member m's interface ifName to the bridge of switch swName, creating m's
// namespace first unless it exists (the router has one cable per segment). The veth is
// created from the switch namespace with its peer placed straight into m's namespace, so
// neither end ever exists in the host namespace.
func (l *Lab) plugIn(sw *namespace, swName string, br netlink.Link, m Member, ifName string) error {
	var ns *namespace
	var err error
	if _, statErr := os.Stat(NetNSPath(m.NetNS)); statErr == nil {
		ns, err = openNamespace(m.NetNS)
	} else {
		ns, err = newNamespace(m.NetNS)
	}
	if err != nil {
		return err
	}
	defer ns.close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: m.Name, MasterIndex: br.Attrs().Index},
		PeerName:      ifName,
		PeerNamespace: netlink.NsFd(ns.fd),
	}
	if err := sw.h.LinkAdd(veth); err != nil {
		return fmt.Errorf("cable %s to %s: %w", m.NetNS, swName, err)
	}
	swEnd, err := sw.h.LinkByName(m.Name)
	if err == nil {
		err = sw.h.LinkSetUp(swEnd)
	}
	if err != nil {
		return fmt.Errorf("bring up %s in %s: %w", m.Name, swName, err)
	}
	eth0, err := ns.h.LinkByName(ifName)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", ifName, m.NetNS, err)
	}
	addr, err := netlink.ParseAddr(m.IP + "/24")
	if err != nil {
		return fmt.Errorf("address of %s: %w", m.Name, err)
	}
	if err := ns.h.AddrAdd(eth0, addr); err != nil {
		return fmt.Errorf("address %s on %s in %s: %w", addr, ifName, m.NetNS, err)
	}
	if err := ns.h.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("bring up %s in %s: %w", ifName, m.NetNS, err)
	}
	return nil
}

// namespace is a lab namespace opened for configuration through netlink.
type namespace struct {
	fd netns.NsHandle
	h  *netlink.Handle
}

// newNamespace creates the named namespace with lo up and opens a netlink handle in it.
func newNamespace(name string) (*namespace, error) {
	if _, err := network.NewNetNS(NetNSDir, name); err != nil {
		return nil, err
	}
	return openNamespace(name)
}

// openNamespace opens a netlink handle in the named lab namespace and brings its lo up.
func openNamespace(name string) (*namespace, error) {
	path := NetNSPath(name)
	fd, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	h, err := netlink.NewHandleAt(fd)
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("netlink in %s: %w", name, err)
	}
	ns := &namespace{fd: fd, h: h}
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		ns.close()
		return nil, fmt.Errorf("bring up lo in %s: %w", name, err)
	}
	return ns, nil
}

func (ns *namespace) close() {
	ns.h.Close()
	ns.fd.Close()
}

// routeServiceCIDR routes the Service range onto the lab segment, as a host's default route
// would: a connection to a ClusterIP needs a route before miniproxy's DNAT picks the real
// destination. Anything not DNATed dies on the lab switch; nothing leaves the lab.
func routeServiceCIDR(cidr string) error {
	_, dst, err := net.ParseCIDR(cidr)
	if err != nil {
		return fmt.Errorf("service CIDR %q: %w", cidr, err)
	}
	link, err := netlink.LinkByName(MemberInterface)
	if err != nil {
		return fmt.Errorf("find %s: %w", MemberInterface, err)
	}
	if err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}); err != nil {
		return fmt.Errorf("route %s via %s: %w", cidr, MemberInterface, err)
	}
	return nil
}

// writeResolverFiles points every node's resolver at the lab's upstream DNS server and
// gives that server its names: a host outside the cluster, and the lab's members.
func (l *Lab) writeResolverFiles() error {
	hosts := "# Names outside the cluster, served by the lab's upstream DNS server (minilab upstream-dns).\n" +
		"# Every other name is NXDOMAIN: the lab has no way out. Edit, then: minilab restart upstream-dns\n" +
		fmt.Sprintf("%s\thost.example.test %s.example.test\n", l.ControlPlane.IP, l.ControlPlane.Name)
	for _, n := range l.Nodes {
		hosts += fmt.Sprintf("%s\t%s.example.test\n", n.IP, n.Name)
		if err := os.WriteFile(n.ResolvConf, []byte("nameserver "+l.UpstreamDNS+"\n"), 0o644); err != nil {
			return fmt.Errorf("resolver configuration of %s: %w", n.Name, err)
		}
	}
	if err := os.WriteFile(l.UpstreamDNSHosts, []byte(hosts), 0o644); err != nil {
		return fmt.Errorf("upstream DNS names: %w", err)
	}
	return nil
}
