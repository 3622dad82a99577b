package lab

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fault is a failure made on purpose in a running lab (minilab stop, partition, netem,
// link down), recorded in lab.json until it is undone (start, heal, link up; down undoes
// all, since it removes what they change).
type Fault struct {
	Kind   string `json:"kind"`   // stop, partition, netem, link-down
	Target string `json:"target"` // the process (stop) or node
	Detail string `json:"detail,omitempty"`
	// Process is what a stopped process was, to start it again.
	Process *Process `json:"process,omitempty"`
	// NetNS and Undo are the command that undoes the fault, run in NetNS.
	NetNS string   `json:"netns,omitempty"`
	Undo  []string `json:"undo,omitempty"`
	// Commands are more undo commands (a partition's rules), each run in NetNS.
	Commands [][]string `json:"commands,omitempty"`
}

// Fault kinds.
const (
	FaultStop      = "stop"
	FaultPartition = "partition"
	FaultNetem     = "netem"
	FaultLinkDown  = "link-down"
)

// Node is the lab's worker node of that name.
func (l *Lab) Node(name string) (Node, error) {
	i := slices.IndexFunc(l.Nodes, func(n Node) bool { return n.Name == name })
	if i < 0 {
		return Node{}, fmt.Errorf("lab %q has no node %q", l.Name, name)
	}
	return l.Nodes[i], nil
}

func (l *Lab) addFault(f Fault) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Faults = append(l.Faults, f)
	return l.save()
}

// dropFault forgets the faults matching kind and target.
func (l *Lab) dropFault(kind, target string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Faults = slices.DeleteFunc(l.Faults, func(f Fault) bool { return f.Kind == kind && f.Target == target })
	return l.save()
}

func (l *Lab) hasFault(kind, target string) bool {
	return slices.ContainsFunc(l.Faults, func(f Fault) bool { return f.Kind == kind && f.Target == target })
}

// StopProcess stops the recorded process name (SIGTERM, up to grace, then SIGKILL) and
// remembers it as a fault until StartProcess or Heal starts it again.
func (l *Lab) StopProcess(name string, grace time.Duration) error {
	l.mu.Lock()
	i := slices.IndexFunc(l.Processes, func(r ProcessRecord) bool { return r.Name == name })
	var p Process
	if i >= 0 {
		r := l.Processes[i]
		p = Process{Name: r.Name, NetNS: r.NetNS, Args: r.Args, Cgroup: r.Cgroup}
	}
	l.mu.Unlock()
	if i < 0 {
		if l.hasFault(FaultStop, name) {
			return fmt.Errorf("%s is already stopped; minilab start %s", name, name)
		}
		return fmt.Errorf("lab %q has no process %q", l.Name, name)
	}
	if err := l.Stop(name, grace); err != nil {
		return err
	}
	return l.addFault(Fault{Kind: FaultStop, Target: name, Process: &p})
}

// StartProcess starts again a process StopProcess stopped, returning its PID.
func (l *Lab) StartProcess(name string) (int, error) {
	i := slices.IndexFunc(l.Faults, func(f Fault) bool { return f.Kind == FaultStop && f.Target == name })
	if i < 0 {
		return 0, fmt.Errorf("lab %q has no stopped process %q (see minilab info)", l.Name, name)
	}
	pid, err := l.Start(*l.Faults[i].Process)
	if err != nil {
		return 0, err
	}
	return pid, l.dropFault(FaultStop, name)
}

// Partition drops every frame between each of nodes (node-i, or a control-plane member
// cp-N, cp or client) and each member named in from (the same names; every other port of
// the switch when from is empty), both ways, on the lab switch, with ebtables in the switch
// namespace.
func (l *Lab) Partition(ctx context.Context, nodes, from []string) error {
	if len(nodes) == 0 {
		return fmt.Errorf("partition: name at least one node")
	}
	for _, name := range nodes {
		seg, err := l.segmentOf(name)
		if err != nil {
			return err
		}
		if l.hasFault(FaultPartition, name) {
			return fmt.Errorf("%s is already partitioned; minilab heal first", name)
		}
		var rules [][]string
		if len(from) == 0 {
			rules = [][]string{{"-i", name, "-j", "DROP"}, {"-o", name, "-j", "DROP"}}
		}
		for _, other := range from {
			otherSeg, err := l.segmentOf(other)
			if err != nil {
				return err
			}
			if otherSeg != seg {
				return fmt.Errorf("partition %s from %s: they are on different segments; partition the router's side instead", name, other)
			}
			rules = append(rules, []string{"-i", name, "-o", other, "-j", "DROP"}, []string{"-i", other, "-o", name, "-j", "DROP"})
		}
		sw := l.Switches[seg]
		f := Fault{Kind: FaultPartition, Target: name, NetNS: sw, Detail: "from " + strings.Join(from, ",")}
		if len(from) == 0 {
			f.Detail = "from every other member of its segment"
		}
		for _, r := range rules {
			if err := run(ctx, sw, append([]string{"ebtables", "-A", "FORWARD"}, r...)...); err != nil {
				l.undo(ctx, f) // the rules added so far
				return fmt.Errorf("partition %s: %w", name, err)
			}
			f.Commands = append(f.Commands, append([]string{"ebtables", "-D", "FORWARD"}, r...))
		}
		if err := l.addFault(f); err != nil {
			return err
		}
	}
	return nil
}

// segmentOf is the segment of member name (cp, client and the control-plane members cp-N
// are on segment 0).
func (l *Lab) segmentOf(name string) (int, error) {
	if name == l.ControlPlane.Name || (l.Client != nil && name == l.Client.Name) ||
		slices.ContainsFunc(l.ControlPlanes, func(m Member) bool { return m.Name == name }) {
		return 0, nil
	}
	n, err := l.Node(name)
	return n.Segment, err
}

// Netem is what `minilab netem` puts on a node's uplink (tc-netem(8) terms).
type Netem struct {
	Delay, Jitter string // 100ms, 10ms
	Loss          string // 5%
	Rate          string // 1mbit
}

func (n Netem) args() []string {
	var a []string
	if n.Delay != "" {
		a = append(a, "delay", n.Delay)
		if n.Jitter != "" {
			a = append(a, n.Jitter)
		}
	}
	if n.Loss != "" {
		a = append(a, "loss", n.Loss)
	}
	if n.Rate != "" {
		a = append(a, "rate", n.Rate)
	}
	return a
}

// SetNetem puts delay, loss or a rate limit on node's uplink (its eth0) with tc netem; a
// second call replaces the first.
func (l *Lab) SetNetem(ctx context.Context, node string, n Netem) error {
	if _, err := l.Node(node); err != nil {
		return err
	}
	args := n.args()
	if len(args) == 0 {
		return fmt.Errorf("netem %s: give at least one of --delay, --loss, --rate", node)
	}
	if n.Jitter != "" && n.Delay == "" {
		return fmt.Errorf("netem %s: --jitter needs --delay", node)
	}
	ns := l.nodeNetNS(node)
	cmd := append([]string{"tc", "qdisc", "replace", "dev", MemberInterface, "root", "netem"}, args...)
	if err := run(ctx, ns, cmd...); err != nil {
		if strings.Contains(err.Error(), "qdisc kind is unknown") {
			return fmt.Errorf("netem %s: this kernel has no netem queueing discipline (module sch_netem): %w", node, err)
		}
		return fmt.Errorf("netem %s: %w", node, err)
	}
	_ = l.dropFault(FaultNetem, node)
	return l.addFault(Fault{Kind: FaultNetem, Target: node, Detail: strings.Join(args, " "), NetNS: ns,
		Undo: []string{"tc", "qdisc", "del", "dev", MemberInterface, "root"}})
}

func (l *Lab) nodeNetNS(node string) string {
	n, _ := l.Node(node)
	return n.NetNS
}

// SetLink takes node's cable out of the lab switch (its switch-side end down) or puts it
// back.
func (l *Lab) SetLink(node string, up bool) error {
	n, err := l.Node(node)
	if err != nil {
		return err
	}
	if err := setPort(l.Switches[n.Segment], node, up); err != nil {
		return err
	}
	if up {
		return l.dropFault(FaultLinkDown, node)
	}
	if l.hasFault(FaultLinkDown, node) {
		return nil
	}
	return l.addFault(Fault{Kind: FaultLinkDown, Target: node, NetNS: l.Switches[n.Segment]})
}

func setPort(sw, port string, up bool) error {
	ns, err := openNamespace(sw)
	if err != nil {
		return err
	}
	defer ns.close()
	link, err := ns.h.LinkByName(port)
	if err != nil {
		return fmt.Errorf("find %s on %s: %w", port, sw, err)
	}
	if up {
		err = ns.h.LinkSetUp(link)
	} else {
		err = ns.h.LinkSetDown(link)
	}
	if err != nil {
		return fmt.Errorf("set %s on %s up=%t: %w", port, sw, up, err)
	}
	return nil
}

// Heal undoes every fault, the latest first, and returns what failed.
func (l *Lab) Heal(ctx context.Context) error {
	var errs []string
	for i := len(l.Faults) - 1; i >= 0; i-- {
		f := l.Faults[i]
		var err error
		switch f.Kind {
		case FaultStop:
			_, err = l.StartProcess(f.Target)
		case FaultLinkDown:
			err = l.SetLink(f.Target, true)
		default:
			if err = l.undo(ctx, f); err == nil {
				err = l.dropFault(f.Kind, f.Target)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %s: %v", f.Kind, f.Target, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}

// undo runs a fault's undo commands.
func (l *Lab) undo(ctx context.Context, f Fault) error {
	cmds := f.Commands
	if len(f.Undo) > 0 {
		cmds = append(cmds, f.Undo)
	}
	for _, c := range cmds {
		if err := run(ctx, f.NetNS, c...); err != nil {
			return err
		}
	}
	return nil
}

// run runs a command in a lab namespace, its output in the error. The exit status is
// told, not wrapped: minilab passes a wrapped command's exit code through silently.
func run(ctx context.Context, netns string, argv ...string) error {
	out, err := Command(ctx, netns, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
