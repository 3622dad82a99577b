package explain

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/network/policy"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Report is explain --from POD --to POD|SERVICE: the Service translation when the
// destination is a Service, then the NetworkPolicy verdict of each connection it makes (one
// per endpoint; one for a pod).
type Report struct {
	Paths       []Path       `json:"paths,omitempty"`
	Connections []Connection `json:"connections"`
}

// Connection is one connection's policy verdict on both ends.
type Connection struct {
	From     string `json:"from"` // namespace/name (address), or the address
	To       string `json:"to"`
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
	// Egress is the source pod's verdict, Ingress the destination pod's; nil: that end is
	// no pod, so no policy applies there.
	Egress  *End   `json:"egress"`
	Ingress *End   `json:"ingress"`
	Verdict string `json:"verdict"`
}

// End is one pod's verdict with the counters of the rules it met on this node.
type End struct {
	policy.Verdict
	// Tier is the tier whose rule decided: AdminNetworkPolicy, NetworkPolicy or
	// BaselineAdminNetworkPolicy; "" when none did (not isolated, no admin rule matched).
	Tier string `json:"tier,omitempty"`
	// Admin are AdminBy in the order they decide, an AdminNetworkPolicy with its priority.
	Admin []string `json:"admin,omitempty"`
	Hops  []Hop    `json:"hops"`
	Note  string   `json:"note,omitempty"`
}

// cluster is what the policy verdict reads from the API: every pod, namespace, NetworkPolicy
// and admin policy.
type cluster struct {
	state policy.State
	byIP  map[string]*corev1.Pod // pods (not hostNetwork) by their IP
}

func readCluster(ctx context.Context, client *Client) (*cluster, error) {
	pods, err := client.pods(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	nss, err := client.namespaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	nps, err := client.networkPolicies(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing networkpolicies: %w", err)
	}
	// Nodes, for the admin policies' node peers.
	nodes, err := client.nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	c := &cluster{byIP: map[string]*corev1.Pod{}}
	for i := range nodes.Items {
		c.state.Nodes = append(c.state.Nodes, &nodes.Items[i])
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		c.state.Pods = append(c.state.Pods, p)
		if !p.Spec.HostNetwork && p.Status.PodIP != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			c.byIP[p.Status.PodIP] = p
		}
	}
	for i := range nss.Items {
		c.state.Namespaces = append(c.state.Namespaces, &nss.Items[i])
	}
	for i := range nps.Items {
		c.state.Policies = append(c.state.Policies, &nps.Items[i])
	}
	// An API that does not serve the admin policies (their CRDs not installed) has none.
	// The BANP is listed, not read by name: a node may list and watch it, as minilet does.
	anps, err := client.adminNetworkPolicies(ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing adminnetworkpolicies: %w", err)
	}
	if err == nil {
		for i := range anps.Items {
			c.state.AdminPolicies = append(c.state.AdminPolicies, &anps.Items[i])
		}
	}
	banps, err := client.baselineAdminNetworkPolicies(ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing baselineadminnetworkpolicies: %w", err)
	}
	if err == nil {
		for i := range banps.Items {
			if banps.Items[i].Name == policy.BaselineName {
				c.state.Baseline = &banps.Items[i]
			}
		}
	}
	return c, nil
}

func (c *cluster) pod(ref string) (*corev1.Pod, error) {
	ns, name, _ := strings.Cut(ref, "/")
	for _, p := range c.state.Pods {
		if p.Namespace == ns && p.Name == name {
			if p.Status.PodIP == "" {
				return nil, fmt.Errorf("pod %s has no IP yet", ref)
			}
			return p, nil
		}
	}
	return nil, fmt.Errorf(`pods "%s" not found in namespace %q`, name, ns)
}

// runConnections explains o's connections: o.From a pod or an address, o.To (or o.Service)
// a pod or a Service.
func runConnections(ctx context.Context, client *Client, o Options, out io.Writer) error {
	c, err := readCluster(ctx, client)
	if err != nil {
		return err
	}
	var src *corev1.Pod
	srcIP := o.From
	if net.ParseIP(o.From) == nil {
		if src, err = c.pod(o.From); err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		srcIP = src.Status.PodIP
	} else {
		src = c.byIP[o.From]
	}
	kind, ref := o.target()
	if kind == "" {
		kind, err = targetKind(ctx, client, ref)
		if err != nil {
			return err
		}
	}
	tables, err := readTables(ctx)
	if err != nil {
		return err
	}
	local := localAddresses()
	var r Report
	if kind == "pod" || kind == "address" {
		dstIP := ref
		if kind == "pod" {
			dst, err := c.pod(ref)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			dstIP = dst.Status.PodIP
		}
		if o.Port == 0 {
			return fmt.Errorf("--port is required with --to a pod or an address (the destination port to decide on)")
		}
		proto := corev1.Protocol(strings.ToUpper(o.Protocol))
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		r.Connections = append(r.Connections, c.connection(tables, local, src, srcIP, dstIP, proto, o.Port))
	} else {
		if r.Paths, err = servicePaths(ctx, client, tables, ref, o.Port, o.Protocol, srcIP); err != nil {
			return err
		}
		seen := map[string]bool{} // an endpoint reached by several paths (cluster IP, node port) is decided once
		for _, p := range r.Paths {
			for _, e := range p.Endpoints {
				host, port, err := net.SplitHostPort(e.DNAT)
				if err != nil || seen[p.Protocol+" "+e.DNAT] {
					continue
				}
				seen[p.Protocol+" "+e.DNAT] = true
				n, err := strconv.ParseUint(port, 10, 16)
				if err != nil {
					continue
				}
				r.Connections = append(r.Connections, c.connection(tables, local, src, srcIP, host, corev1.Protocol(strings.ToUpper(p.Protocol)), int32(n)))
			}
		}
	}
	if o.Output == "json" {
		return writeJSON(out, r)
	}
	for _, p := range r.Paths {
		Render(out, p)
		fmt.Fprintln(out)
	}
	for i, cn := range r.Connections {
		if i > 0 {
			fmt.Fprintln(out)
		}
		RenderConnection(out, cn)
	}
	return nil
}

// targetKind tells whether ref (namespace/name) is a pod or a Service, refusing to guess
// when it is both.
func targetKind(ctx context.Context, client *Client, ref string) (string, error) {
	ns, name, _ := strings.Cut(ref, "/")
	_, podErr := client.pod(ctx, ns, name)
	_, svcErr := client.service(ctx, ns, name)
	switch {
	case podErr == nil && svcErr == nil:
		return "", fmt.Errorf("--to %s: both a pod and a Service have that name: write --to pod/%s or --to service/%s", ref, ref, ref)
	case podErr == nil:
		return "pod", nil
	case svcErr == nil:
		return "service", nil
	}
	return "", fmt.Errorf("--to %s: neither a pod nor a Service: %v; %v", ref, podErr, svcErr)
}

// connection decides src -> dstIP:port on both ends.
func (c *cluster) connection(tables Tables, local func(string) bool, src *corev1.Pod, srcIP, dstIP string, proto corev1.Protocol, port int32) Connection {
	dst := c.byIP[dstIP]
	conn := policy.Connection{Src: srcIP, Dst: dstIP, Protocol: proto, Port: port}
	out := Connection{From: srcIP, To: dstIP, Protocol: string(proto), Port: port}
	if src != nil {
		conn.SrcName = src.Namespace + "/" + src.Name
		out.From = fmt.Sprintf("%s (%s)", conn.SrcName, srcIP)
	}
	if node := c.nodeOf(dstIP); node != "" && dst == nil {
		conn.DstName = "node/" + node
		out.To = fmt.Sprintf("%s (%s)", conn.DstName, dstIP)
	}
	if dst != nil {
		conn.DstName = dst.Namespace + "/" + dst.Name
		out.To = fmt.Sprintf("%s (%s)", conn.DstName, dstIP)
		if src != nil {
			conn.FromNode = src.Spec.HostNetwork && src.Spec.NodeName == dst.Spec.NodeName
		} else if _, here := tables.chain(policy.ChainName(dst, networkingv1.PolicyTypeIngress)); here && local != nil {
			conn.FromNode = local(srcIP)
		}
	}
	if src != nil {
		// A connection to this node's own address (a hostNetwork pod, a node port, a Service
		// DNATed to the node) meets the source's chain from INPUT, not FORWARD.
		top := policy.TopChain
		if local != nil && local(dstIP) {
			top = policy.InputChain
		}
		out.Egress = c.end(tables, top, policy.Decide(&c.state, src, networkingv1.PolicyTypeEgress, conn))
	}
	if dst != nil {
		out.Ingress = c.end(tables, policy.TopChain, policy.Decide(&c.state, dst, networkingv1.PolicyTypeIngress, conn))
	}
	out.Verdict = "allowed"
	for _, e := range []*End{out.Egress, out.Ingress} {
		if e == nil || e.Allowed {
			continue
		}
		out.Verdict = fmt.Sprintf("denied by the %s policies of %s", e.Direction, e.Pod)
		if e.By != nil && e.Tier != tierNetworkPolicy {
			out.Verdict += fmt.Sprintf(": %s %s", e.Tier, c.adminPolicy(e.By.Kind, e.By.Policy))
		}
		break
	}
	return out
}

// nodeOf is the name of the Node having ip among its addresses; "": none.
func (c *cluster) nodeOf(ip string) string {
	for _, n := range c.state.Nodes {
		for _, a := range n.Status.Addresses {
			if a.Address == ip {
				return n.Name
			}
		}
	}
	return ""
}

// adminPolicy names an admin policy of kind as people read it: anp/NAME (priority N) or
// banp/NAME.
func (c *cluster) adminPolicy(kind, name string) string {
	if kind == policy.KindBANP {
		return "banp/" + name
	}
	for _, anp := range c.state.AdminPolicies {
		if anp.Name == name {
			return fmt.Sprintf("anp/%s (priority %d)", name, anp.Spec.Priority)
		}
	}
	return "anp/" + name
}

const tierNetworkPolicy = "NetworkPolicy"

// tier is the tier whose rule gave v: the kind of the rule that decided, or the closing DROP
// of the NetworkPolicies isolating the pod.
func tier(v policy.Verdict) string {
	switch {
	case v.By != nil && v.By.Kind != "":
		return v.By.Kind
	case v.By != nil, !v.Allowed && len(v.IsolatedBy) > 0:
		return tierNetworkPolicy
	}
	return ""
}

func (t Tables) chain(name string) ([]Rule, bool) {
	filter := t["filter"]
	if filter == nil {
		return nil, false
	}
	rules, ok := filter.Chains[name]
	return rules, ok
}

// end adds to v its tier, its admin policies and the counters of this node's rules it
// names: top's (TopChain's or InputChain's) jump to the pod's chain, OutputChain's (where
// what IPVS translated is decided, when the node has IPVS), the rule that decided, and the
// chain's DROP.
func (c *cluster) end(t Tables, top string, v policy.Verdict) *End {
	e := &End{Verdict: v, Tier: tier(v), Hops: []Hop{}}
	for _, a := range v.AdminBy {
		kind, name, _ := strings.Cut(a, "/")
		if kind == "banp" {
			e.Admin = append(e.Admin, a)
		} else {
			e.Admin = append(e.Admin, c.adminPolicy(policy.KindANP, name))
		}
	}
	if v.Chain == "" {
		return e
	}
	rules, ok := t.chain(v.Chain)
	if !ok {
		e.Note = fmt.Sprintf("%s is not on this node: it is enforced on %s (run explain there for its counters)", v.Chain, v.Node)
		return e
	}
	jumps, _ := t.chain(top)
	note := "new connections of " + v.Pod
	if top == policy.InputChain {
		note += " to this node"
	}
	for _, r := range jumps {
		if r.Target == v.Chain {
			e.Hops = append(e.Hops, Hop{Table: "filter", Chain: top, Rule: r.Text, Packets: r.Packets, Bytes: r.Bytes, Note: note})
		}
	}
	if top != policy.InputChain { // a connection to the node itself is not translated
		afterIPVS, _ := t.chain(policy.OutputChain)
		for _, r := range afterIPVS {
			if r.Target == v.Chain {
				e.Hops = append(e.Hops, Hop{Table: "filter", Chain: policy.OutputChain, Rule: r.Text, Packets: r.Packets, Bytes: r.Bytes,
					Note: "new connections of " + v.Pod + " through IPVS (a Service), decided after its translation"})
			}
		}
	}
	_, want, err := parseRule("-A " + v.Chain + " " + v.Rule)
	if err != nil || v.Index >= len(rules) || rules[v.Index].Comment != want.Comment {
		e.Note = "this node's chain differs from what the API holds now (the policy controller has not synced it yet?)"
		return e
	}
	r := rules[v.Index]
	e.Hops = append(e.Hops, Hop{Table: "filter", Chain: v.Chain, Rule: r.Text, Packets: r.Packets, Bytes: r.Bytes, Note: "decides"})
	if last := rules[len(rules)-1]; v.Index != len(rules)-1 && last.Target == "DROP" {
		e.Hops = append(e.Hops, Hop{Table: "filter", Chain: v.Chain, Rule: last.Text, Packets: last.Packets, Bytes: last.Bytes, Note: "what the pod's policies denied so far"})
	}
	return e
}

// RenderConnection prints c for people.
func RenderConnection(out io.Writer, c Connection) {
	fmt.Fprintf(out, "connection %s -> %s %s %d\n", c.From, c.To, c.Protocol, c.Port)
	for _, side := range []struct {
		dir, who string
		e        *End
	}{{"egress", c.From, c.Egress}, {"ingress", c.To, c.Ingress}} {
		if side.e == nil {
			fmt.Fprintf(out, "  %s of %s: no pod, no policy applies\n", side.dir, side.who)
			continue
		}
		e := side.e
		if len(e.IsolatedBy) == 0 && len(e.Admin) == 0 {
			fmt.Fprintf(out, "  %s of %s on %s: %s\n", side.dir, e.Pod, e.Node, e.Reason)
			continue
		}
		var by []string
		if len(e.IsolatedBy) > 0 {
			by = append(by, strings.Join(e.IsolatedBy, ", "))
		}
		if len(e.Admin) > 0 {
			by = append(by, "the admin policies "+strings.Join(e.Admin, ", "))
		}
		fmt.Fprintf(out, "  %s of %s on %s: isolated for %s by %s\n", side.dir, e.Pod, e.Node, side.dir, strings.Join(by, "; "))
		// With admin policies around, which of the three tiers decided is worth saying.
		switch {
		case len(e.Admin) == 0:
			fmt.Fprintf(out, "    %s\n", e.Reason)
		case e.Tier == "":
			fmt.Fprintf(out, "    no tier decided: %s\n", e.Reason)
		default:
			fmt.Fprintf(out, "    the %s tier decided: %s\n", e.Tier, e.Reason)
		}
		for _, h := range e.Hops {
			fmt.Fprintf(out, "    %-6s %-20s [%d pkts, %d bytes] %s   <- %s\n", h.Table, h.Chain, h.Packets, h.Bytes, h.Rule, h.Note)
		}
		if e.Note != "" {
			fmt.Fprintf(out, "    (%s)\n", e.Note)
		}
	}
	fmt.Fprintf(out, "  verdict: %s\n", c.Verdict)
}
