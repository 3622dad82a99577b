package l2

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

// Responder answers ARP requests for the addresses it owns, on the given interfaces only,
// each with that interface's hardware address. An address is answered on an interface
// only when one of the interface's IPv4 subnets holds it, so an address never leaks onto a
// segment it does not belong to.
type Responder struct {
	log    *slog.Logger
	ifaces []*iface
	mu     sync.Mutex
	owned  map[netip.Addr]bool
}

type iface struct {
	name     string
	mac      net.HardwareAddr
	prefixes []netip.Prefix
	c        *arp.Client
}

// NewResponder opens a raw ARP socket on each named interface (in this network namespace).
func NewResponder(names []string, log *slog.Logger) (*Responder, error) {
	r := &Responder{log: log, owned: map[netip.Addr]bool{}}
	for _, name := range names {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("--lb-interfaces %s: %w", name, err)
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("--lb-interfaces %s: %w", name, err)
		}
		i := &iface{name: name, mac: ifi.HardwareAddr}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
				i.prefixes = append(i.prefixes, p.Masked())
			}
		}
		if len(i.prefixes) == 0 || len(i.mac) != 6 {
			r.Close()
			return nil, fmt.Errorf("--lb-interfaces %s: not an Ethernet interface with an IPv4 address", name)
		}
		if i.c, err = arp.Dial(ifi); err != nil {
			r.Close()
			return nil, fmt.Errorf("--lb-interfaces %s: ARP socket: %w", name, err)
		}
		r.ifaces = append(r.ifaces, i)
	}
	return r, nil
}

// Segment is the subnet of the first interface holding ip.
func (r *Responder) Segment(ip netip.Addr) (netip.Prefix, bool) {
	for _, i := range r.ifaces {
		for _, p := range i.prefixes {
			if p.Contains(ip) {
				return p, true
			}
		}
	}
	return netip.Prefix{}, false
}

func (i *iface) holds(ip netip.Addr) bool {
	for _, p := range i.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Run answers requests until ctx ends, then closes the sockets.
func (r *Responder) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, i := range r.ifaces {
		wg.Add(1)
		go func() { defer wg.Done(); r.serve(i) }()
	}
	<-ctx.Done()
	r.Close()
	wg.Wait()
}

func (r *Responder) serve(i *iface) {
	for {
		p, _, err := i.c.Read()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.log.Error("reading ARP stopped", "interface", i.name, "err", err)
			}
			return
		}
		if p.Operation != arp.OperationRequest || bytes6(p.SenderHardwareAddr, i.mac) {
			continue
		}
		r.mu.Lock()
		mine := r.owned[p.TargetIP]
		r.mu.Unlock()
		if !mine || !i.holds(p.TargetIP) {
			continue
		}
		if err := i.c.Reply(p, i.mac, p.TargetIP); err != nil {
			r.log.Warn("ARP reply failed", "interface", i.name, "ip", p.TargetIP, "err", err)
		}
	}
}

func bytes6(a, b net.HardwareAddr) bool { return string(a) == string(b) }

// Set makes ips the owned addresses. Each newly owned one is announced with gratuitous
// ARP (a request and a reply, broadcast, sender and target the address), so the segment's
// caches move to this node at once instead of when their entries expire.
func (r *Responder) Set(ips []netip.Addr) {
	next := make(map[netip.Addr]bool, len(ips))
	var gained []netip.Addr
	r.mu.Lock()
	for _, ip := range ips {
		next[ip] = true
		if !r.owned[ip] {
			gained = append(gained, ip)
		}
	}
	for ip := range r.owned {
		if !next[ip] {
			r.log.Info("no longer answering ARP for a load balancer address", "ip", ip)
		}
	}
	r.owned = next
	r.mu.Unlock()
	for _, ip := range gained {
		r.log.Info("answering ARP for a load balancer address", "ip", ip)
		for _, i := range r.ifaces {
			if i.holds(ip) {
				r.gratuitous(i, ip)
			}
		}
	}
}

func (r *Responder) gratuitous(i *iface, ip netip.Addr) {
	for _, op := range []arp.Operation{arp.OperationRequest, arp.OperationReply} {
		p, err := arp.NewPacket(op, i.mac, ip, ethernet.Broadcast, ip)
		if err == nil {
			err = i.c.WriteTo(p, ethernet.Broadcast)
		}
		if err != nil {
			r.log.Warn("gratuitous ARP failed", "interface", i.name, "ip", ip, "err", err)
		}
	}
}

// Close closes the sockets.
func (r *Responder) Close() {
	for _, i := range r.ifaces {
		if i.c != nil {
			_ = i.c.Close()
		}
	}
}
