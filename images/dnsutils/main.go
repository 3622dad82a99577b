// Command nslookup looks names up the way a pod's programs do: through the resolver
// configuration in /etc/resolv.conf, search list and ndots included (Go's resolver follows
// them as the C library does), printing what bind's nslookup prints. busybox's nslookup
// applies the search list only to names without a dot, so `nslookup kubernetes.default`
// would never reach kubernetes.default.svc.cluster.local; this one does. It is the
// nslookup of localhost/minik8s/dnsutils:v1, the image docs/dns.md debugs DNS with.
//
// Usage: nslookup NAME [SERVER]
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stdout, err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) < 1 || len(args) > 2 || strings.HasPrefix(args[0], "-") {
		return errors.New("usage: nslookup NAME [SERVER]")
	}
	name := args[0]
	server, err := firstNameserver("/etc/resolv.conf")
	if len(args) == 2 {
		server, err = args[1], nil
	}
	if err != nil {
		return err
	}
	r := &net.Resolver{PreferGo: true}
	if len(args) == 2 {
		// Every query to SERVER; the search list and options still come from resolv.conf.
		r.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort(server, "53"))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Fprintf(out, "Server:\t\t%s\nAddress:\t%s#53\n\n", server, server)

	if ip := net.ParseIP(name); ip != nil {
		names, err := r.LookupAddr(ctx, name)
		if err != nil {
			return notFound(name, err)
		}
		for _, n := range names {
			fmt.Fprintf(out, "%s\tname = %s\n", reverseName(ip), n)
		}
		return nil
	}
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		return notFound(name, err)
	}
	// The name that answered: NAME as given or completed from the search list.
	canonical, err := r.LookupCNAME(ctx, name)
	if err != nil {
		canonical = name
	}
	for _, a := range addrs {
		fmt.Fprintf(out, "Name:\t%s\nAddress: %s\n", strings.TrimSuffix(canonical, "."), a)
	}
	return nil
}

func notFound(name string, err error) error {
	reason := "SERVFAIL"
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		reason = "NXDOMAIN"
	}
	return fmt.Errorf("** server can't find %s: %s", name, reason)
}

// firstNameserver is the server the resolver asks first.
func firstNameserver(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "nameserver" {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s names no nameserver", path)
}

// reverseName is ip's in-addr.arpa (or ip6.arpa) name, as nslookup prints it.
func reverseName(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return fmt.Sprintf("%d.%d.%d.%d.in-addr.arpa", v4[3], v4[2], v4[1], v4[0])
	}
	var b strings.Builder
	const hex = "0123456789abcdef"
	for i := len(ip) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "%c.%c.", hex[ip[i]&0xf], hex[ip[i]>>4])
	}
	return b.String() + "ip6.arpa"
}
