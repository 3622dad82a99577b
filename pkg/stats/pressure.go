package stats

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// DefaultEvictionHard are the kubelet's default hard eviction thresholds on Linux
// (--eviction-hard); none is on pid.available, so PIDPressure needs one given.
const DefaultEvictionHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%"

// DefaultPressureTransitionPeriod is how long a pressure condition stays after its
// threshold was last crossed (the kubelet's --eviction-pressure-transition-period).
const DefaultPressureTransitionPeriod = 5 * time.Minute

// The kubelet's eviction signals and the node condition each one raises.
var signalCondition = map[string]Condition{
	"memory.available":   MemoryPressure,
	"nodefs.available":   DiskPressure,
	"nodefs.inodesFree":  DiskPressure,
	"imagefs.available":  DiskPressure,
	"imagefs.inodesFree": DiskPressure,
	"pid.available":      PIDPressure,
}

// Condition is a node pressure condition.
type Condition string

const (
	MemoryPressure Condition = "MemoryPressure"
	DiskPressure   Condition = "DiskPressure"
	PIDPressure    Condition = "PIDPressure"
)

// Threshold is one "signal<quantity" or "signal<percent%" of --eviction-hard.
type Threshold struct {
	Signal     string
	Quantity   *resource.Quantity
	Percentage float64 // of the signal's capacity, when Quantity is nil
}

// ParseThresholds reads the kubelet's --eviction-hard syntax.
func ParseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		signal, value, ok := strings.Cut(item, "<")
		if !ok {
			return nil, fmt.Errorf("eviction threshold %q: want signal<quantity (only the < operator is supported)", item)
		}
		if _, known := signalCondition[signal]; !known {
			return nil, fmt.Errorf("eviction threshold %q: unknown signal %q", item, signal)
		}
		t := Threshold{Signal: signal}
		if pct, isPct := strings.CutSuffix(value, "%"); isPct {
			p, err := strconv.ParseFloat(pct, 64)
			if err != nil || p < 0 || p > 100 {
				return nil, fmt.Errorf("eviction threshold %q: %q is not a percentage in [0, 100]", item, value)
			}
			t.Percentage = p / 100
		} else {
			q, err := resource.ParseQuantity(value)
			if err != nil || q.Sign() < 0 {
				return nil, fmt.Errorf("eviction threshold %q: %q is not a non-negative quantity", item, value)
			}
			t.Quantity = &q
		}
		out = append(out, t)
	}
	return out, nil
}

// observe is the signal's available amount and capacity in the summary; ok is false
// when the summary lacks it.
func observe(s *statsapi.Summary, signal string) (available, capacity int64, ok bool) {
	n := s.Node
	fs := func(f *statsapi.FsStats, inodes bool) (int64, int64, bool) {
		switch {
		case f == nil:
		case inodes && f.InodesFree != nil && f.Inodes != nil:
			return int64(*f.InodesFree), int64(*f.Inodes), true
		case !inodes && f.AvailableBytes != nil && f.CapacityBytes != nil:
			return int64(*f.AvailableBytes), int64(*f.CapacityBytes), true
		}
		return 0, 0, false
	}
	var imageFs *statsapi.FsStats
	if n.Runtime != nil {
		imageFs = n.Runtime.ImageFs
	}
	switch signal {
	case "memory.available":
		if m := n.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
			return int64(*m.AvailableBytes), int64(*m.AvailableBytes + *m.WorkingSetBytes), true
		}
	case "nodefs.available":
		return fs(n.Fs, false)
	case "nodefs.inodesFree":
		return fs(n.Fs, true)
	case "imagefs.available":
		return fs(imageFs, false)
	case "imagefs.inodesFree":
		return fs(imageFs, true)
	case "pid.available":
		if r := n.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
			return *r.MaxPID - *r.NumOfRunningProcesses, *r.MaxPID, true
		}
	}
	return 0, 0, false
}

// Pressure turns samples into the node's pressure conditions as the kubelet's eviction
// manager does: a condition is on while a threshold of its signals is crossed and for
// the transition period after.
type Pressure struct {
	thresholds []Threshold
	period     time.Duration

	mu       sync.Mutex
	lastSeen map[Condition]time.Time
	crossed  map[Condition][]string // the thresholds crossed in the last sample
}

// NewPressure watches thresholds.
func NewPressure(thresholds []Threshold, period time.Duration) *Pressure {
	return &Pressure{thresholds: thresholds, period: period, lastSeen: map[Condition]time.Time{}, crossed: map[Condition][]string{}}
}

// Crossing is a threshold a sample crosses: the signal's available amount is below min.
type Crossing struct {
	Threshold
	Condition Condition
	Available int64
	Capacity  int64
	Min       int64 // the threshold in the signal's unit (bytes, inodes, pids)
}

// Crossed lists the thresholds s crosses, in the order given.
func Crossed(s *statsapi.Summary, thresholds []Threshold) []Crossing {
	var out []Crossing
	for _, t := range thresholds {
		available, capacity, ok := observe(s, t.Signal)
		if !ok {
			continue
		}
		min := int64(t.Percentage * float64(capacity))
		if t.Quantity != nil {
			min = t.Quantity.Value()
		}
		if available < min {
			out = append(out, Crossing{Threshold: t, Condition: signalCondition[t.Signal], Available: available, Capacity: capacity, Min: min})
		}
	}
	return out
}

// Observe records the thresholds s crosses at now.
func (p *Pressure) Observe(s *statsapi.Summary, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.crossed = map[Condition][]string{}
	for _, c := range Crossed(s, p.thresholds) {
		p.lastSeen[c.Condition] = now
		p.crossed[c.Condition] = append(p.crossed[c.Condition], fmt.Sprintf("%s: %d available < %d", c.Signal, c.Available, c.Min))
	}
}

// Under reports whether the node is under cond at now, and which thresholds were
// crossed last.
func (p *Pressure) Under(cond Condition, now time.Time) (bool, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen, ok := p.lastSeen[cond]
	if !ok || now.Sub(seen) >= p.period {
		return false, nil
	}
	crossed := append([]string(nil), p.crossed[cond]...)
	sort.Strings(crossed)
	return true, crossed
}
