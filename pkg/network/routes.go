package network

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RouteProtocol marks the routes SyncPodCIDRRoutes owns (`ip route` shows "proto 75").
// 75 (0x4b, "K") is unassigned in iproute2's rt_protos, so no routing daemon uses it; the mark
// lets a sync delete its own stale routes without touching anyone else's.
const RouteProtocol netlink.RouteProtocol = 0x4b

// SyncPodCIDRRoutes makes the main routing table of the current network namespace send each
// pod CIDR to its node IP (host-gw), replacing changed routes and deleting routes it made
// earlier for CIDRs no longer listed. A CIDR already routed by someone else (such as the
// node's own pod bridge) is left alone and reported as an error, after the rest is synced.
func SyncPodCIDRRoutes(routes map[string]net.IP) error {
	want := make(map[string]*netlink.Route, len(routes))
	for cidr, gw := range routes {
		_, dst, err := net.ParseCIDR(cidr)
		if err != nil {
			return fmt.Errorf("pod CIDR %q: %w", cidr, err)
		}
		if gw == nil || (gw.To4() == nil) != (dst.IP.To4() == nil) {
			return fmt.Errorf("pod CIDR %s: node IP %v is missing or of the other IP family", dst, gw)
		}
		want[dst.String()] = &netlink.Route{Dst: dst, Gw: gw, Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
	}

	existing, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	var errs []error
	foreign := map[string]bool{}
	for _, r := range existing {
		if r.Dst == nil {
			continue
		}
		key := r.Dst.String()
		if r.Protocol != RouteProtocol {
			foreign[key] = true
			continue
		}
		if _, keep := want[key]; !keep {
			if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("delete stale pod CIDR route to %s: %w", key, err))
			}
		}
	}
	for key, r := range want {
		if foreign[key] {
			errs = append(errs, fmt.Errorf("pod CIDR %s is already routed by something else; not replacing that route", key))
			continue
		}
		if err := netlink.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("route pod CIDR %s via %s: %w", key, r.Gw, err))
		}
	}
	return errors.Join(errs...)
}
