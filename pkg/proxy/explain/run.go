package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Options are miniproxy explain's flags.
type Options struct {
	Service  string // namespace/name
	From     string // source address or pod (namespace/name); "" unknown
	To       string // destination pod or Service, [pod/|service/]namespace/name, or an address
	Port     int32  // a service port or node port, or the pod's port; 0: every service port
	Protocol string // "" (every service port; TCP to a pod), TCP, UDP or SCTP
	Output   string // "" (text) or "json"
}

// Validate checks the options before anything is read.
func (o *Options) Validate() error {
	switch {
	case o.Service == "" && o.To == "":
		return fmt.Errorf("--service or --to is required")
	case o.Service != "" && o.To != "":
		return fmt.Errorf("--service and --to both given: --to names a pod or a Service, --service only a Service")
	case o.Service != "" && !isRef(o.Service):
		return fmt.Errorf("--service %q: want NAMESPACE/NAME", o.Service)
	}
	if kind, ref := o.target(); o.To != "" && kind != "address" && !isRef(ref) {
		return fmt.Errorf("--to %q: want NAMESPACE/NAME, pod/NAMESPACE/NAME, service/NAMESPACE/NAME or an IPv4 address", o.To)
	}
	if o.From != "" && net.ParseIP(o.From).To4() == nil && !isRef(o.From) {
		return fmt.Errorf("--from %q: want an IPv4 address or a pod, NAMESPACE/NAME", o.From)
	}
	if o.To != "" && o.From == "" {
		return fmt.Errorf("--from is required with --to (the pod or address the connection comes from)")
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--port %d: out of range", o.Port)
	}
	switch strings.ToUpper(o.Protocol) {
	case "", "TCP", "UDP", "SCTP":
	default:
		return fmt.Errorf("--protocol %q: want TCP, UDP or SCTP", o.Protocol)
	}
	if o.Output != "" && o.Output != "json" {
		return fmt.Errorf("-o %q: only json is supported", o.Output)
	}
	return nil
}

// target is the destination's kind ("pod", "service", "address", or "" when --to does not
// say) and its namespace/name (the address).
func (o *Options) target() (string, string) {
	if o.Service != "" {
		return "service", o.Service
	}
	if net.ParseIP(o.To).To4() != nil {
		return "address", o.To
	}
	for _, k := range []string{"pod", "service"} {
		if ref, ok := strings.CutPrefix(o.To, k+"/"); ok && strings.Count(o.To, "/") == 2 {
			return k, ref
		}
	}
	return "", o.To
}

func isRef(s string) bool {
	ns, name, ok := strings.Cut(s, "/")
	return ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// Run explains the Service's paths from the rules this network namespace holds now; with
// a pod on either end (--from POD, --to), the policy verdict of each connection too, across
// the admin policies and the NetworkPolicies.
func Run(ctx context.Context, client *Client, o Options, out io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.To != "" || isRef(o.From) {
		return runConnections(ctx, client, o, out)
	}
	tables, err := readTables(ctx)
	if err != nil {
		return err
	}
	paths, err := servicePaths(ctx, client, tables, o.Service, o.Port, o.Protocol, o.From)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		return writeJSON(out, paths)
	}
	for i, p := range paths {
		if i > 0 {
			fmt.Fprintln(out)
		}
		Render(out, p)
	}
	return nil
}

// servicePaths walks tables for the Service ref (namespace/name): each destination of its
// ports, or of port and protocol when given, from source from ("" any).
func servicePaths(ctx context.Context, client *Client, tables Tables, ref string, port int32, protocol, from string) ([]Path, error) {
	ns, name, _ := strings.Cut(ref, "/")
	svc, err := client.service(ctx, ns, name)
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", ref, err)
	}
	queries, err := Queries(svc, port, from)
	if err != nil {
		return nil, err
	}
	local := localAddresses()
	var paths []Path
	for _, q := range queries {
		if protocol != "" && !strings.EqualFold(q.Protocol, protocol) {
			continue
		}
		q.Local = local
		paths = append(paths, Walk(tables, q))
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("service %s has no %s port", ref, strings.ToUpper(protocol))
	}
	return paths, nil
}

// readTables reads this network namespace's nat and filter tables with their counters.
func readTables(ctx context.Context) (Tables, error) {
	var save strings.Builder
	for _, table := range []string{"nat", "filter"} {
		text, err := exec.CommandContext(ctx, "iptables-save", "-c", "-t", table).Output()
		if err != nil {
			return nil, fmt.Errorf("iptables-save -c -t %s: %w", table, err)
		}
		save.Write(text)
	}
	tables, err := ParseSave(save.String())
	if err != nil {
		return nil, fmt.Errorf("reading iptables-save: %w", err)
	}
	return tables, nil
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Queries are the packets to explain for svc: to each port's cluster IP, external IPs,
// load balancer IPs and node port; port (a service port or a node port) picks some.
func Queries(svc *corev1.Service, port int32, from string) ([]Query, error) {
	var out []Query
	var known []string
	for _, p := range svc.Spec.Ports {
		spName := svc.Namespace + "/" + svc.Name
		if p.Name != "" {
			spName += ":" + p.Name
		}
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		q := Query{Service: spName, Protocol: proto, DstPort: p.Port, From: from}
		known = append(known, fmt.Sprint(p.Port))
		if port == 0 || port == p.Port {
			if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
				q.Kind, q.DstIP = "cluster IP", ip
				out = append(out, q)
			}
			for _, ip := range svc.Spec.ExternalIPs {
				q.Kind, q.DstIP = "external IP", ip
				out = append(out, q)
			}
			for _, ing := range svc.Status.LoadBalancer.Ingress {
				if ing.IP != "" {
					q.Kind, q.DstIP = "load balancer IP", ing.IP
					out = append(out, q)
				}
			}
		}
		if p.NodePort != 0 {
			known = append(known, fmt.Sprintf("%d (node port)", p.NodePort))
			if port == 0 || port == p.NodePort {
				q.Kind, q.DstIP, q.DstPort = "node port", "", p.NodePort
				out = append(out, q)
			}
		}
	}
	if len(out) == 0 {
		if port != 0 {
			return nil, fmt.Errorf("service %s/%s has no port or node port %d (it has %s)", svc.Namespace, svc.Name, port, strings.Join(known, ", "))
		}
		return nil, fmt.Errorf("service %s/%s has no cluster IP, external or load balancer IP, or node port to explain", svc.Namespace, svc.Name)
	}
	return out, nil
}

// localAddresses says whether an IP is one of this network namespace's own addresses.
func localAddresses() func(string) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	set := map[string]bool{}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			set[n.IP.String()] = true
		}
	}
	return func(ip string) bool { return set[ip] || strings.HasPrefix(ip, "127.") }
}

// Render prints p for people.
func Render(out io.Writer, p Path) {
	dst := fmt.Sprintf("%s:%d", p.DstIP, p.DstPort)
	if p.Kind == "node port" {
		dst = fmt.Sprintf("any local address:%d", p.DstPort)
	}
	from := "any source"
	if p.From != "" {
		from = p.From
	}
	fmt.Fprintf(out, "%s (%s) %s %s, from %s\n", p.Service, p.Protocol, p.Kind, dst, from)
	for _, h := range p.Hops {
		note := ""
		if h.Note != "" {
			note = "   <- " + h.Note
		}
		fmt.Fprintf(out, "  %-6s %-26s [%d pkts, %d bytes] %s%s\n", h.Table, h.Chain, h.Packets, h.Bytes, h.Rule, note)
	}
	for _, m := range p.Masquerade {
		fmt.Fprintf(out, "  source NAT: %s\n", m)
	}
	if p.Affinity != "" {
		fmt.Fprintf(out, "  affinity: %s\n", p.Affinity)
	}
	if len(p.Endpoints) > 0 {
		fmt.Fprintln(out, "  endpoints (picked at random by the statistic rules):")
	}
	for _, e := range p.Endpoints {
		when := ""
		if e.When != "" {
			when = " if " + e.When
		}
		fmt.Fprintf(out, "    %5.1f%%  %s via %s [%d pkts]  DNAT to %s%s\n", e.Probability*100, e.Chain, e.Via, e.Packets, e.DNAT, when)
		if e.Hairpin != "" {
			fmt.Fprintf(out, "            %s\n", e.Hairpin)
		}
	}
	fmt.Fprintf(out, "  verdict: %s\n", p.Verdict)
}
