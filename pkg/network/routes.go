package network

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RouteProtocol marks the routes SyncPodRoutes owns (`ip route` shows "proto 75").
// 75 (0x4b, "K") is unassigned in iproute2's rt_protos, so no routing daemon uses it; the mark
// lets a sync delete its own stale routes without touching anyone else's.
const RouteProtocol netlink.RouteProtocol = 0x4b

// ErrNextHopNotOnLink says a host-gw next hop is not on a directly connected network: the
// node owning the pod CIDR is behind a router, which host-gw cannot cross.
var ErrNextHopNotOnLink = errors.New("next hop is not on a directly connected network")

// PodRoute sends another node's pod CIDR to a next hop: the node's own IP (host-gw), or
// the node's VTEP address on the overlay device (OnLink through LinkIndex, vxlan).
type PodRoute struct {
	Dst       *net.IPNet
	Gw        net.IP
	LinkIndex int  // 0: whichever link reaches Gw
	OnLink    bool // Gw is on LinkIndex whatever its addresses say (the overlay)
}

func (r PodRoute) netlinkRoute() *netlink.Route {
	nr := &netlink.Route{Dst: r.Dst, Gw: r.Gw, LinkIndex: r.LinkIndex, Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
	if r.OnLink {
		nr.Flags = int(netlink.FLAG_ONLINK)
	}
	return nr
}

// SyncPodRoutes makes the main routing table of the current network namespace hold exactly
// the wanted pod routes among the routes it owns (RouteProtocol): changed routes are
// replaced, routes it made earlier for CIDRs no longer wanted are deleted. A CIDR already
// routed by someone else (such as the node's own pod bridge) is left alone. Failures are
// returned per destination CIDR, after everything else is synced.
func SyncPodRoutes(want []PodRoute) map[string]error {
	failed := map[string]error{}
	wanted := make(map[string]PodRoute, len(want))
	for _, r := range want {
		if r.Dst == nil || r.Gw == nil || (r.Gw.To4() == nil) != (r.Dst.IP.To4() == nil) {
			failed[fmt.Sprint(r.Dst)] = fmt.Errorf("pod CIDR %v: next hop %v is missing or of the other IP family", r.Dst, r.Gw)
			continue
		}
		wanted[r.Dst.String()] = r
	}
	existing, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		failed[""] = fmt.Errorf("list routes: %w", err)
		return failed
	}
	foreign := map[string]bool{}
	current := map[string]netlink.Route{}
	for _, r := range existing {
		if r.Dst == nil {
			continue
		}
		key := r.Dst.String()
		if r.Protocol != RouteProtocol {
			foreign[key] = true
			continue
		}
		current[key] = r
		if _, keep := wanted[key]; !keep {
			if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				failed[key] = fmt.Errorf("delete stale route to pod CIDR %s: %w", key, err)
			}
		}
	}
	for key, r := range wanted {
		if foreign[key] {
			failed[key] = fmt.Errorf("pod CIDR %s is already routed by something else; not replacing that route", key)
			continue
		}
		if cur, ok := current[key]; ok && same(cur, r) {
			continue // in place: a resync of an unchanged cluster makes no netlink call per route
		}
		if !r.OnLink {
			if err := checkOnLink(r.Gw); err != nil {
				failed[key] = fmt.Errorf("route pod CIDR %s via %s: %w", key, r.Gw, err)
				continue
			}
		}
		if err := netlink.RouteReplace(r.netlinkRoute()); err != nil {
			failed[key] = fmt.Errorf("route pod CIDR %s via %s: %w", key, r.Gw, err)
		}
	}
	return failed
}

// same says whether route cur already is what r asks for.
func same(cur netlink.Route, r PodRoute) bool {
	onlink := cur.Flags&int(netlink.FLAG_ONLINK) != 0
	return cur.Gw.Equal(r.Gw) && onlink == r.OnLink && (r.LinkIndex == 0 || cur.LinkIndex == r.LinkIndex)
}

// checkOnLink fails unless gw is reachable without another router in between.
func checkOnLink(gw net.IP) error {
	routes, err := netlink.RouteGet(gw)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNextHopNotOnLink, err)
	}
	for _, r := range routes {
		if r.Gw != nil {
			return fmt.Errorf("%w: %s is reached through router %s", ErrNextHopNotOnLink, gw, r.Gw)
		}
	}
	return nil
}

// OwnedRoutes lists the pod routes SyncPodRoutes made in the current network namespace.
func OwnedRoutes() ([]netlink.Route, error) {
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN, Protocol: RouteProtocol},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return nil, fmt.Errorf("list pod routes: %w", err)
	}
	return routes, nil
}
