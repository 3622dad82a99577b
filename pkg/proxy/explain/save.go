// Package explain reads the rules the kernel holds (iptables-save -c) and tells the path a
// packet to a Service takes through kube-proxy's chains: which rule of KUBE-SERVICES or
// KUBE-NODEPORTS catches it, the KUBE-SVC/KUBE-SVL/KUBE-EXT/KUBE-FW chains it passes, each
// KUBE-SEP it may reach with its probability and packet counters, the DNAT target, and
// whether it is masqueraded — for labs, where reading iptables-save by hand is the lesson.
package explain

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Tables are iptables tables by name ("nat", "filter"), as iptables-save -c printed them.
type Tables map[string]*Table

// Table is one table's chains with their rules in order.
type Table struct {
	Chains map[string][]Rule
}

// Rule is one rule: its packet and byte counters, the text iptables-save printed (without
// counters and "-A CHAIN"), and the parts explain reads.
type Rule struct {
	Packets, Bytes uint64
	Text           string
	Src, Dst       match // -s, -d
	Protocol       string
	DPort          string
	Comment        string
	SrcLocal       int8 // -m addrtype --src-type LOCAL: 1; with "!": -1
	DstLocal       int8
	Probability    float64 // -m statistic --probability; 0: none
	RecentCheck    bool    // -m recent --rcheck (ClientIP affinity)
	RecentSeconds  int
	Target         string // -j
	TargetArgs     []string
}

// match is an address match, possibly negated.
type match struct {
	Not  bool
	CIDR string
}

// ParseSave reads iptables-save output (with or without -c) of any number of tables.
func ParseSave(text string) (Tables, error) {
	out := Tables{}
	var cur *Table
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || line == "COMMIT":
		case strings.HasPrefix(line, "*"):
			cur = &Table{Chains: map[string][]Rule{}}
			out[line[1:]] = cur
		case cur == nil:
			return nil, fmt.Errorf("line %d: %q before any *table line", n, line)
		case strings.HasPrefix(line, ":"):
			if f := strings.Fields(line[1:]); len(f) > 0 {
				if _, ok := cur.Chains[f[0]]; !ok {
					cur.Chains[f[0]] = nil
				}
			}
		default:
			chain, r, err := parseRule(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			cur.Chains[chain] = append(cur.Chains[chain], r)
		}
	}
	return out, sc.Err()
}

// parseRule reads "[p:b] -A CHAIN args..." (counters optional).
func parseRule(line string) (string, Rule, error) {
	var r Rule
	if strings.HasPrefix(line, "[") {
		end := strings.IndexByte(line, ']')
		if end < 0 {
			return "", r, fmt.Errorf("unterminated counters in %q", line)
		}
		p, b, ok := strings.Cut(line[1:end], ":")
		var err1, err2 error
		r.Packets, err1 = strconv.ParseUint(p, 10, 64)
		r.Bytes, err2 = strconv.ParseUint(b, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return "", r, fmt.Errorf("bad counters in %q", line)
		}
		line = strings.TrimSpace(line[end+1:])
	}
	args, err := fields(line)
	if err != nil {
		return "", r, err
	}
	if len(args) < 2 || args[0] != "-A" {
		return "", r, fmt.Errorf("not a rule: %q", line)
	}
	chain := args[1]
	args = args[2:]
	r.Text = strings.TrimSpace(strings.TrimPrefix(line, "-A "+chain))
	not := false
	next := func(i *int) string {
		*i++
		if *i < len(args) {
			return args[*i]
		}
		return ""
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "!":
			not = true
			continue
		case "-s":
			r.Src = match{not, next(&i)}
		case "-d":
			r.Dst = match{not, next(&i)}
		case "-p":
			r.Protocol = next(&i)
		case "--dport":
			r.DPort = next(&i)
		case "--comment":
			r.Comment = next(&i)
		case "--src-type", "--dst-type":
			v := int8(1)
			if not {
				v = -1
			}
			if next(&i) == "LOCAL" {
				if a == "--src-type" {
					r.SrcLocal = v
				} else {
					r.DstLocal = v
				}
			}
		case "--probability":
			r.Probability, _ = strconv.ParseFloat(next(&i), 64)
		case "--rcheck":
			r.RecentCheck = true
		case "--seconds":
			r.RecentSeconds, _ = strconv.Atoi(next(&i))
		case "-j":
			r.Target = next(&i)
			r.TargetArgs = args[i+1:]
			i = len(args)
		}
		not = false
	}
	return chain, r, nil
}

// fields splits like a shell does for iptables-save's quoting ("..." with \" escapes).
func fields(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == '"':
			quoted = !quoted
			in = true
		case !quoted && (c == ' ' || c == '\t'):
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		out = append(out, b.String())
	}
	return out, nil
}
