package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// dig asks the resolv.conf name server as BIND's dig does with the options the DNS tests
// use: `dig [@SERVER] [-p PORT] [+tcp|+notcp] [+noall] [+answer] [+search] [+short] NAME [TYPE]`.
// +noall +answer prints the answer records in zone file form, +short only their data;
// +search tries the search list as the resolver would (ndots). Exit status 0 for any
// answer, NXDOMAIN included, 9 when no server answered.
func dig(args []string) int { return digWith("/etc/resolv.conf", args, os.Stdout) }

func digWith(resolvConf string, args []string, out io.Writer) int {
	conf, err := dns.ClientConfigFromFile(resolvConf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dig:", err)
		return 10
	}
	q := digQuery{qtype: dns.TypeA, sections: true}
	servers := conf.Servers
	var names []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-p" && i+1 < len(args):
			i++
			conf.Port = args[i]
		case strings.HasPrefix(a, "@"):
			servers = []string{a[1:]}
		case strings.HasPrefix(a, "+"):
			q.option(a[1:])
		case dns.StringToType[strings.ToUpper(a)] != 0 && len(names) > 0:
			q.qtype = dns.StringToType[strings.ToUpper(a)]
		case strings.EqualFold(a, "IN"):
		default:
			names = append(names, a)
		}
	}
	if len(names) != 1 {
		fmt.Fprintln(os.Stderr, "usage: dig [@SERVER] [+OPTION...] NAME [TYPE]")
		return 1
	}
	candidates := []string{dns.Fqdn(names[0])}
	if q.search {
		candidates = conf.NameList(names[0])
	}
	var last *dns.Msg
	for _, name := range candidates {
		resp, err := q.ask(name, servers, conf.Port)
		if err != nil {
			fmt.Fprintf(out, ";; connection timed out; no servers could be reached: %v\n", err)
			return 9
		}
		last = resp
		if resp.Rcode == dns.RcodeSuccess && len(resp.Answer) > 0 {
			break
		}
	}
	q.print(out, last)
	return 0
}

type digQuery struct {
	qtype              uint16
	tcp, search, short bool
	sections           bool // print the answer section (off after +noall until +answer)
}

func (q *digQuery) option(o string) {
	switch o {
	case "tcp", "vc":
		q.tcp = true
	case "notcp", "novc":
		q.tcp = false
	case "search":
		q.search = true
	case "nosearch":
		q.search = false
	case "short":
		q.short = true
	case "noall":
		q.sections = false
	case "answer", "all":
		q.sections = true
	}
}

func (q *digQuery) ask(name string, servers []string, port string) (*dns.Msg, error) {
	msg := new(dns.Msg)
	msg.SetQuestion(name, q.qtype)
	client := &dns.Client{Timeout: 5 * time.Second}
	if q.tcp {
		client.Net = "tcp"
	}
	var err error
	for _, server := range servers {
		var resp *dns.Msg
		resp, _, err = client.ExchangeContext(context.Background(), msg, net.JoinHostPort(server, port))
		if err == nil {
			return resp, nil
		}
	}
	return nil, err
}

func (q *digQuery) print(out io.Writer, resp *dns.Msg) {
	for _, rr := range resp.Answer {
		switch {
		case q.short:
			// The record's data: its zone file form after name, TTL, class and type.
			fields := strings.SplitN(rr.String(), "\t", 5)
			fmt.Fprintln(out, fields[len(fields)-1])
		case q.sections:
			fmt.Fprintln(out, rr.String())
		}
	}
}

// getent answers `getent hosts NAME...` from /etc/hosts and DNS as the C library would:
// one "IP  NAME" line per address; exit status 2 when a name has none.
func getent(args []string) int {
	if len(args) < 2 || args[0] != "hosts" {
		fmt.Fprintln(os.Stderr, "usage: getent hosts NAME...")
		return 1
	}
	status := 0
	for _, name := range args[1:] {
		addrs, err := net.DefaultResolver.LookupHost(context.Background(), name)
		if err != nil || len(addrs) == 0 {
			status = 2
			continue
		}
		for _, a := range addrs {
			fmt.Printf("%-15s %s\n", a, name)
		}
	}
	return status
}
