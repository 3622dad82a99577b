// Package ipset keeps kernel ip sets equal to a wanted content: where kube-proxy would need a
// rule per service, one iptables rule matches a set instead. Each sync is ONE `ipset restore`
// carrying the creates, the removals and the additions (the difference from what the kernel
// holds), so a sync touching one entry is one line, and a 10 000-entry sync one process.
package ipset

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
)

// Type is an ipset type, as `ipset create` names it.
type Type string

// The types kube-proxy's sets use.
const (
	HashIP        Type = "hash:ip"
	HashIPPort    Type = "hash:ip,port"
	HashIPPortIP  Type = "hash:ip,port,ip"
	HashIPPortNet Type = "hash:ip,port,net"
	BitmapPort    Type = "bitmap:port"
)

// Set is one ip set with the entries it should hold, in `ipset save` form
// ("10.96.0.1,tcp:443", "10.244.1.2,tcp:8080,10.244.1.2", "30080").
type Set struct {
	Name    string
	Type    Type
	Comment string // what the set is for; iptables rules matching it carry this comment
	Entries map[string]bool
}

// New makes an empty set.
func New(name string, typ Type, comment string) *Set {
	return &Set{Name: name, Type: typ, Comment: comment, Entries: map[string]bool{}}
}

// Add puts an entry in the set.
func (s *Set) Add(entry string) { s.Entries[entry] = true }

// createLine is the `ipset restore` line creating the set if it does not exist.
func (s *Set) createLine() string {
	opts := "family inet hashsize 1024 maxelem 65536"
	if s.Type == BitmapPort {
		opts = "range 0-65535"
	}
	return fmt.Sprintf("create %s %s %s -exist", s.Name, s.Type, opts)
}

// IPPort is the hash:ip,port entry of ip, protocol and port.
func IPPort(ip, protocol string, port int32) string {
	return fmt.Sprintf("%s,%s:%d", ip, strings.ToLower(protocol), port)
}

// IPPortIP is the hash:ip,port,ip entry: ip:port and a second address.
func IPPortIP(ip, protocol string, port int32, ip2 string) string {
	return IPPort(ip, protocol, port) + "," + ip2
}

// Script is the `ipset restore` input that turns current (set name -> entries the kernel
// holds; a missing name is a set that does not exist) into want: every set created if
// missing, stale entries deleted, missing ones added. Lines are sorted for stable output.
func Script(want []*Set, current map[string]map[string]bool) string {
	var b strings.Builder
	for _, s := range want {
		have, exists := current[s.Name]
		if !exists {
			b.WriteString(s.createLine())
			b.WriteByte('\n')
		}
		for _, e := range sorted(have, s.Entries) {
			fmt.Fprintf(&b, "del %s %s\n", s.Name, e)
		}
		for _, e := range sorted(s.Entries, have) {
			fmt.Fprintf(&b, "add %s %s\n", s.Name, e)
		}
	}
	return b.String()
}

// sorted lists the keys of a that are not in b.
func sorted(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Restore feeds script to one `ipset restore`.
func Restore(ctx context.Context, script string) error {
	if script == "" {
		return nil
	}
	cmd := exec.CommandContext(ctx, "ipset", "restore")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ipset restore: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Save reads the entries of every set the kernel holds (name -> entries), from one
// `ipset save`.
func Save(ctx context.Context) (map[string]map[string]bool, error) {
	out, err := exec.CommandContext(ctx, "ipset", "save").Output()
	if err != nil {
		return nil, fmt.Errorf("ipset save: %w%s", err, stderr(err))
	}
	return ParseSave(out)
}

// ParseSave reads `ipset save` output.
func ParseSave(out []byte) (map[string]map[string]bool, error) {
	sets := map[string]map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "create":
			sets[f[1]] = map[string]bool{}
		case "add":
			if len(f) < 3 || sets[f[1]] == nil {
				return nil, fmt.Errorf("ipset save: unexpected line %q", sc.Text())
			}
			sets[f[1]][f[2]] = true
		}
	}
	return sets, sc.Err()
}

// Destroy removes the named sets that exist. A set still referenced by an iptables rule
// cannot go: remove the rules first.
func Destroy(ctx context.Context, names ...string) error {
	have, err := Save(ctx)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, n := range names {
		if _, ok := have[n]; ok {
			fmt.Fprintf(&b, "destroy %s\n", n)
		}
	}
	return Restore(ctx, b.String())
}

func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// Syncer writes a group of sets, remembering what it wrote so that the next sync only
// sends the difference; Reset makes the next sync read the kernel again (a full sync).
type Syncer struct {
	written map[string]map[string]bool // nil: read the kernel first
}

// Reset forgets what was written: the next Sync compares with the kernel.
func (s *Syncer) Reset() { s.written = nil }

// Sync makes the kernel's sets equal want; it returns the number of lines written. The
// entry maps of want are kept as the record of what was written: do not change them after.
func (s *Syncer) Sync(ctx context.Context, want []*Set) (int, error) {
	current := s.written
	if current == nil {
		all, err := Save(ctx)
		if err != nil {
			return 0, err
		}
		current = map[string]map[string]bool{}
		for _, set := range want {
			if have, ok := all[set.Name]; ok {
				current[set.Name] = have
			}
		}
	}
	script := Script(want, current)
	if err := Restore(ctx, script); err != nil {
		s.written = nil
		return 0, err
	}
	s.written = map[string]map[string]bool{}
	for _, set := range want {
		s.written[set.Name] = set.Entries
	}
	return strings.Count(script, "\n"), nil
}
