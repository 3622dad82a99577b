package loadbalancer

import (
	"fmt"
	"net/netip"
	"strings"
)

// Pool is the range LoadBalancer IPs come from: a CIDR ("10.200.0.192/27", network and
// broadcast addresses left out) or a range ("10.200.0.200-10.200.0.250").
type Pool struct {
	first, last netip.Addr
}

// ParsePool reads --loadbalancer-ip-pool.
func ParsePool(s string) (Pool, error) {
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		first, err1 := netip.ParseAddr(strings.TrimSpace(lo))
		last, err2 := netip.ParseAddr(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || !first.Is4() || !last.Is4() || last.Less(first) {
			return Pool{}, fmt.Errorf("--loadbalancer-ip-pool %q: want FIRST-LAST IPv4 addresses, FIRST <= LAST", s)
		}
		return Pool{first, last}, nil
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 30 {
		return Pool{}, fmt.Errorf("--loadbalancer-ip-pool %q: want an IPv4 CIDR of at least 4 addresses or FIRST-LAST", s)
	}
	prefix = prefix.Masked()
	first := prefix.Addr().Next()
	last := first
	for next := last.Next(); prefix.Contains(next.Next()); next = next.Next() {
		last = next
	}
	return Pool{first, last}, nil
}

// Contains says whether ip is in the pool.
func (p Pool) Contains(ip netip.Addr) bool {
	return p.first.IsValid() && !ip.Less(p.first) && !p.last.Less(ip)
}

// Free is the lowest address of the pool not in used, if any.
func (p Pool) Free(used map[netip.Addr]string) (netip.Addr, bool) {
	if !p.first.IsValid() {
		return netip.Addr{}, false
	}
	for ip := p.first; !p.last.Less(ip); ip = ip.Next() {
		if _, taken := used[ip]; !taken {
			return ip, true
		}
	}
	return netip.Addr{}, false
}
