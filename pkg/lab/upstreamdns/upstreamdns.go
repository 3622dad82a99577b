// Package upstreamdns is a lab's DNS server outside the cluster: the resolver its nodes'
// resolv.conf names, standing in for the DNS a real network gives its hosts, where cluster
// DNS forwards the names it does not own. A lab has no way out, so the server is
// authoritative for the whole name space: the names of its hosts file resolve, every other
// name is NXDOMAIN at once (never a timeout, never a forward anywhere).
package upstreamdns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// TTL of every answer: short, so an edited hosts file shows soon after a restart.
const TTL = 30

// Records are the names served, fully qualified and lower case, with their addresses.
type Records map[string][]net.IP

// ParseHosts reads a hosts file (ADDRESS NAME... per line, # comments).
func ParseHosts(r io.Reader) (Records, error) {
	recs := Records{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		ip := net.ParseIP(fields[0])
		if ip == nil || len(fields) < 2 {
			return nil, fmt.Errorf("line %d: want an address and names, got %q", n, sc.Text())
		}
		for _, name := range fields[1:] {
			if _, ok := dns.IsDomainName(name); !ok {
				return nil, fmt.Errorf("line %d: %q is not a domain name", n, name)
			}
			fqdn := dns.Fqdn(strings.ToLower(name))
			recs[fqdn] = append(recs[fqdn], ip)
		}
	}
	return recs, sc.Err()
}

// soa is the authority of the answers without data, whose minimum TTL bounds how long a
// resolver caches the NXDOMAIN (RFC 2308).
var soa = &dns.SOA{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: TTL},
	Ns: "ns.lab.", Mbox: "hostmaster.lab.", Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: TTL}

// answer is the reply to req from recs.
func (recs Records) answer(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		return m
	}
	q := req.Question[0]
	ips, ok := recs[strings.ToLower(q.Name)]
	if !ok {
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{soa}
		return m
	}
	hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: TTL}
	for _, ip := range ips {
		switch v4 := ip.To4(); {
		case v4 != nil && (q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY):
			h := hdr
			h.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: h, A: v4})
		case v4 == nil && (q.Qtype == dns.TypeAAAA || q.Qtype == dns.TypeANY):
			h := hdr
			h.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: h, AAAA: ip})
		}
	}
	if len(m.Answer) == 0 { // the name is there without data of this type: NODATA
		m.Ns = []dns.RR{soa}
	}
	return m
}

// Listen opens addr for DNS over UDP and TCP.
func Listen(addr string) (net.PacketConn, net.Listener, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("DNS server: %w", err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		pc.Close()
		return nil, nil, fmt.Errorf("DNS server: %w", err)
	}
	return pc, ln, nil
}

// Serve answers from recs on pc (UDP) and ln (TCP) until ctx ends, and closes them.
func Serve(ctx context.Context, pc net.PacketConn, ln net.Listener, recs Records, log *slog.Logger) error {
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := recs.answer(req)
		if len(req.Question) == 1 {
			log.Info("query", "from", w.RemoteAddr().String(), "name", req.Question[0].Name,
				"type", dns.TypeToString[req.Question[0].Qtype], "rcode", dns.RcodeToString[m.Rcode])
		}
		_ = w.WriteMsg(m)
	})
	servers := []*dns.Server{
		{PacketConn: pc, Handler: handler},
		{Listener: ln, Handler: handler, ReadTimeout: 5 * time.Second},
	}
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errs <- s.ActivateAndServe() }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	pc.Close() // ends both servers' loops
	ln.Close()
	if err != nil {
		return fmt.Errorf("DNS server on %s: %w", pc.LocalAddr(), err)
	}
	return nil
}
