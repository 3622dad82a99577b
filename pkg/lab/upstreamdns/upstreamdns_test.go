package upstreamdns

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestParseHosts(t *testing.T) {
	recs, err := ParseHosts(strings.NewReader("# lab\n10.200.0.2 host.example.test Cp.Example.Test # the control plane\n\n2001:db8::1 host.example.test\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || len(recs["host.example.test."]) != 2 || recs["cp.example.test."][0].String() != "10.200.0.2" {
		t.Errorf("records %v", recs)
	}
	for text, want := range map[string]string{
		"10.200.0.2\n":         "line 1: want an address and names",
		"ten host.example\n":   "want an address",
		"10.0.0.1 bad..name\n": `"bad..name" is not a domain name`,
	} {
		if _, err := ParseHosts(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}

// TestServe: a real server on loopback answers over UDP and TCP: the names it has, NODATA
// for a type it lacks, NXDOMAIN with its SOA for every other name.
func TestServe(t *testing.T) {
	recs, err := ParseHosts(strings.NewReader("10.200.0.2 host.example.test\n"))
	if err != nil {
		t.Fatal(err)
	}
	pc, ln, err := Listen("127.0.0.1:0")
	for try := 0; err != nil && try < 10; try++ { // the UDP port taken in TCP: another one
		pc, ln, err = Listen("127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, pc, ln, recs, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addr := pc.LocalAddr().String()
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network}
		ask := func(name string, qtype uint16) *dns.Msg {
			t.Helper()
			m := new(dns.Msg)
			m.SetQuestion(name, qtype)
			r, _, err := c.Exchange(m, addr)
			if err != nil {
				t.Fatalf("%s %s: %v", network, name, err)
			}
			if !r.Authoritative {
				t.Errorf("%s %s: not authoritative", network, name)
			}
			return r
		}
		if r := ask("HOST.example.test.", dns.TypeA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.200.0.2" {
			t.Errorf("%s A host.example.test: %v", network, r)
		}
		if r := ask("host.example.test.", dns.TypeAAAA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
			t.Errorf("%s AAAA host.example.test: want NODATA with the SOA, got %v", network, r)
		}
		if r := ask("nobody.example.test.", dns.TypeA); r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
			t.Errorf("%s A nobody.example.test: want NXDOMAIN with the SOA, got %v", network, r)
		}
	}
}
