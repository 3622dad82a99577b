package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"

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

	sw, err := newNamespace(l.SwitchNetNS)
	if err != nil {
		return err
	}
	defer sw.close()
	if err := sw.h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}}); err != nil {
		return fmt.Errorf("create bridge %s in %s: %w", BridgeName, l.SwitchNetNS, err)
	}
	br, err := sw.h.LinkByName(BridgeName)
	if err != nil {
		return fmt.Errorf("find bridge %s in %s: %w", BridgeName, l.SwitchNetNS, err)
	}
	if err := sw.h.LinkSetUp(br); err != nil {
		return fmt.Errorf("bring up bridge %s in %s: %w", BridgeName, l.SwitchNetNS, err)
	}

	members := []Member{l.ControlPlane}
	for _, n := range l.Nodes {
		members = append(members, Member{Name: n.Name, NetNS: n.NetNS, IP: n.IP})
	}
	for _, m := range members {
		if err := l.plugIn(sw, br, m); err != nil {
			return err
		}
	}

	// Routes to pod CIDRs go through the node owning them (host-gw), the same routes minilet
	// keeps with network.SyncPodCIDRRoutes.
	for _, m := range members {
		routes := map[string]net.IP{}
		for _, other := range l.Nodes {
			if other.Name != m.Name {
				routes[other.PodCIDR] = net.ParseIP(other.IP)
			}
		}
		isNode := m.Name != l.ControlPlane.Name
		err := network.InNetNS(NetNSPath(m.NetNS), func() error {
			if isNode {
				// /proc/sys/net shows the namespace of the thread that opens it.
				if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
					return fmt.Errorf("enable IP forwarding: %w", err)
				}
				if err := routeServiceCIDR(l.ServiceCIDR); err != nil {
					return err
				}
			}
			return network.SyncPodCIDRRoutes(routes)
		})
		if err != nil {
			return fmt.Errorf("set up routing in %s: %w", m.NetNS, err)
		}
	}
	return nil
}

// plugIn creates member m's namespace and cables its eth0 to the bridge. The veth is created
// from the switch namespace with its peer placed straight into m's namespace, so neither end
// ever exists in the host namespace.
func (l *Lab) plugIn(sw *namespace, br netlink.Link, m Member) error {
	ns, err := newNamespace(m.NetNS)
	if err != nil {
		return err
	}
	defer ns.close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: m.Name, MasterIndex: br.Attrs().Index},
		PeerName:      MemberInterface,
		PeerNamespace: netlink.NsFd(ns.fd),
	}
	if err := sw.h.LinkAdd(veth); err != nil {
		return fmt.Errorf("cable %s to %s: %w", m.NetNS, l.SwitchNetNS, err)
	}
	swEnd, err := sw.h.LinkByName(m.Name)
	if err == nil {
		err = sw.h.LinkSetUp(swEnd)
	}
	if err != nil {
		return fmt.Errorf("bring up %s in %s: %w", m.Name, l.SwitchNetNS, err)
	}
	eth0, err := ns.h.LinkByName(MemberInterface)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", MemberInterface, m.NetNS, err)
	}
	addr, err := netlink.ParseAddr(m.IP + "/24")
	if err != nil {
		return fmt.Errorf("address of %s: %w", m.Name, err)
	}
	if err := ns.h.AddrAdd(eth0, addr); err != nil {
		return fmt.Errorf("address %s on %s in %s: %w", addr, MemberInterface, m.NetNS, err)
	}
	if err := ns.h.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("bring up %s in %s: %w", MemberInterface, m.NetNS, err)
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
	path, err := network.NewNetNS(NetNSDir, name)
	if err != nil {
		return nil, err
	}
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
