// Package masq keeps a node's pod egress rules: one MASQUERADE rule, in minilet's own nat
// chain, for traffic from the node's pods to anywhere outside the cluster's pod and node
// addresses (an ipset of them), so pod-to-pod and pod-to-node traffic keeps its source
// address; and filter rules accepting forwarded pod traffic, which a host whose FORWARD
// policy is DROP (Docker sets it) would otherwise drop.
package masq

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"

	"github.com/coreos/go-iptables/iptables"
)

// Names of what this package makes.
const (
	NatChain    = "MINIK8S-POSTROUTING"
	FilterChain = "MINIK8S-FORWARD"
	NoMasqSet   = "MINIK8S-NOMASQ" // pod CIDRs and node IPs of the cluster
)

const comment = "minik8s pod egress"

// Rules are one node's egress rules.
type Rules struct {
	ipt     *iptables.IPTables
	podCIDR string
	last    []string // the set's entries as last written
}

// New prepares the rules for a node whose pods are in podCIDR (IPv4).
func New(podCIDR *net.IPNet) (*Rules, error) {
	if podCIDR.IP.To4() == nil {
		return nil, fmt.Errorf("masquerade: only IPv4 pod CIDRs are supported, got %s", podCIDR)
	}
	ipt, err := iptables.NewWithProtocol(iptables.ProtocolIPv4)
	if err != nil {
		return nil, fmt.Errorf("iptables: %w", err)
	}
	return &Rules{ipt: ipt, podCIDR: podCIDR.String()}, nil
}

// Sync makes the rules current: noMasq are the destinations (CIDRs or addresses) that
// keep pods' source addresses. The set is rewritten only when it changed.
func (r *Rules) Sync(noMasq []string) error {
	entries := slices.Clone(noMasq)
	slices.Sort(entries)
	entries = slices.Compact(entries)
	if !slices.Equal(entries, r.last) {
		if err := writeSet(entries); err != nil {
			return err
		}
		r.last = entries
	}
	masq := []string{"-s", r.podCIDR, "-m", "set", "!", "--match-set", NoMasqSet, "dst",
		"-m", "comment", "--comment", comment, "-j", "MASQUERADE", "--random-fully"}
	if err := r.chain("nat", NatChain, "POSTROUTING", masq); err != nil {
		return err
	}
	if err := r.chain("filter", FilterChain, "",
		[]string{"-s", r.podCIDR, "-m", "comment", "--comment", comment, "-j", "ACCEPT"},
		[]string{"-d", r.podCIDR, "-m", "comment", "--comment", comment, "-j", "ACCEPT"}); err != nil {
		return err
	}
	return r.forwardJumpLast()
}

// forwardJumpLast keeps the FORWARD jump to our ACCEPTs below the service proxy's jumps
// (kube-proxy inserts KUBE-PROXY-FIREWALL, KUBE-FORWARD, KUBE-SERVICES and
// KUBE-EXTERNAL-SERVICES first), so its REJECT of a Service without endpoints sees pods'
// traffic too: appended, as flannel and other CNIs do, and moved down when it sits above a
// KUBE- jump (inserted first by an older minilet, or while the proxy's jumps were missing).
func (r *Rules) forwardJumpLast() error {
	rules, err := r.ipt.List("filter", "FORWARD")
	if err != nil {
		return fmt.Errorf("list chain FORWARD: %w", err)
	}
	ours, lastKube := -1, -1
	for i, rule := range rules {
		switch {
		case strings.HasSuffix(rule, " -j "+FilterChain):
			ours = i
		case strings.Contains(rule, " -j KUBE-"):
			lastKube = i
		}
	}
	if ours >= 0 && ours > lastKube {
		return nil
	}
	jump := []string{"-m", "comment", "--comment", comment, "-j", FilterChain}
	if err := r.ipt.Append("filter", "FORWARD", jump...); err != nil {
		return fmt.Errorf("jump from FORWARD to %s: %w", FilterChain, err)
	}
	if ours >= 0 {
		// Appended first, then the upper copy deleted (-D takes the first match): pods'
		// traffic never passes without one.
		if err := r.ipt.Delete("filter", "FORWARD", jump...); err != nil {
			return fmt.Errorf("move the jump from FORWARD to %s: %w", FilterChain, err)
		}
	}
	return nil
}

// chain makes chain in table hold exactly rules; parent, when not "", jumps to it from its
// top.
func (r *Rules) chain(table, chain, parent string, rules ...[]string) error {
	exists, err := r.ipt.ChainExists(table, chain)
	if err != nil {
		return fmt.Errorf("iptables -t %s: %w", table, err)
	}
	if !exists {
		if err := r.ipt.NewChain(table, chain); err != nil {
			return fmt.Errorf("create chain %s in table %s: %w", chain, table, err)
		}
	}
	current, err := r.ipt.List(table, chain)
	if err != nil {
		return fmt.Errorf("list chain %s: %w", chain, err)
	}
	want := []string{"-N " + chain}
	for _, rule := range rules {
		want = append(want, "-A "+chain+" "+strings.Join(quoteComment(rule), " "))
	}
	if !slices.Equal(current, want) {
		if err := r.ipt.ClearChain(table, chain); err != nil {
			return fmt.Errorf("flush chain %s: %w", chain, err)
		}
		for _, rule := range rules {
			if err := r.ipt.Append(table, chain, rule...); err != nil {
				return fmt.Errorf("append to %s: %w", chain, err)
			}
		}
	}
	if parent == "" {
		return nil
	}
	jump := []string{"-m", "comment", "--comment", comment, "-j", chain}
	ok, err := r.ipt.Exists(table, parent, jump...)
	if err != nil {
		return fmt.Errorf("check jump to %s: %w", chain, err)
	}
	if !ok {
		if err := r.ipt.Insert(table, parent, 1, jump...); err != nil {
			return fmt.Errorf("jump from %s to %s: %w", parent, chain, err)
		}
	}
	return nil
}

// quoteComment writes a rule as iptables -S prints it (the comment quoted).
func quoteComment(rule []string) []string {
	out := slices.Clone(rule)
	for i := range out {
		if i > 0 && out[i-1] == "--comment" {
			out[i] = `"` + out[i] + `"`
		}
	}
	return out
}

// writeSet replaces the no-masquerade set's entries in one ipset restore: a new set is
// filled and swapped in, so the rule never sees it half-written.
func writeSet(entries []string) error {
	tmp := NoMasqSet + "-TMP"
	var in strings.Builder
	fmt.Fprintf(&in, "create %s hash:net family inet -exist\n", NoMasqSet)
	fmt.Fprintf(&in, "create %s hash:net family inet -exist\nflush %s\n", tmp, tmp)
	for _, e := range entries {
		fmt.Fprintf(&in, "add %s %s -exist\n", tmp, e)
	}
	fmt.Fprintf(&in, "swap %s %s\ndestroy %s\n", tmp, NoMasqSet, tmp)
	cmd := exec.Command("ipset", "restore")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ipset restore of %s: %w: %s", NoMasqSet, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Remove deletes the chains, their jumps and the set; missing ones are fine.
func Remove() error {
	ipt, err := iptables.NewWithProtocol(iptables.ProtocolIPv4)
	if err != nil {
		return fmt.Errorf("iptables: %w", err)
	}
	for _, c := range []struct{ table, chain, parent string }{{"nat", NatChain, "POSTROUTING"}, {"filter", FilterChain, "FORWARD"}} {
		_ = ipt.DeleteIfExists(c.table, c.parent, "-m", "comment", "--comment", comment, "-j", c.chain)
		if ok, _ := ipt.ChainExists(c.table, c.chain); ok {
			if err := ipt.ClearAndDeleteChain(c.table, c.chain); err != nil {
				return fmt.Errorf("delete chain %s: %w", c.chain, err)
			}
		}
	}
	if out, err := exec.Command("ipset", "destroy", NoMasqSet).CombinedOutput(); err != nil && !strings.Contains(string(out), "does not exist") {
		return fmt.Errorf("ipset destroy %s: %w: %s", NoMasqSet, err, strings.TrimSpace(string(out)))
	}
	return nil
}
