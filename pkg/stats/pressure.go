package stats

import (
	"errors"
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

// Amount is a threshold's or a minimum reclaim's value: a quantity in the signal's unit,
// or a share of the signal's capacity.
type Amount struct {
	Quantity   *resource.Quantity
	Percentage float64 // of the signal's capacity, when Quantity is nil
}

// Of is the amount in the signal's unit, for a signal of that capacity.
func (a Amount) Of(capacity int64) int64 {
	if a.Quantity != nil {
		return a.Quantity.Value()
	}
	return int64(a.Percentage * float64(capacity))
}

// Threshold is one "signal<quantity" or "signal<percent%" of --eviction-hard or
// --eviction-soft.
type Threshold struct {
	Signal string
	Amount
	// GracePeriod is how long a soft threshold must stay crossed before pods are evicted
	// for it (--eviction-soft-grace-period); 0 is a hard threshold, acted on at once.
	GracePeriod time.Duration
	// MinReclaim (--eviction-minimum-reclaim): once crossed, the threshold counts as met
	// until the signal is this much above it.
	MinReclaim *Amount
}

// Hard reports whether the threshold is acted on as soon as it is crossed, as the
// kubelet's isHardEvictionThreshold.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// ParseThresholds reads the kubelet's --eviction-hard syntax.
func ParseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	seen := map[string]bool{}
	err := eachStatement(s, "<", "eviction threshold", func(signal, value string) error {
		if seen[signal] {
			return fmt.Errorf("found duplicate eviction threshold for signal %s", signal)
		}
		seen[signal] = true
		amount, err := parseAmount(value)
		out = append(out, Threshold{Signal: signal, Amount: amount})
		return err
	})
	return out, err
}

// eachStatement calls fn with the signal and value of each "signal<op>value" of the
// comma-separated list s, the signal checked; what names the statements in errors.
func eachStatement(s, op, what string, fn func(signal, value string) error) error {
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		signal, value, ok := strings.Cut(item, op)
		if !ok {
			return fmt.Errorf("%s %q: want signal%svalue", what, item, op)
		}
		if _, known := signalCondition[signal]; !known {
			return fmt.Errorf("%s %q: unknown signal %q", what, item, signal)
		}
		if err := fn(signal, value); err != nil {
			return fmt.Errorf("%s %q: %w", what, item, err)
		}
	}
	return nil
}

// parseAmount reads a non-negative quantity or a percentage in [0, 100].
func parseAmount(value string) (Amount, error) {
	if pct, isPct := strings.CutSuffix(value, "%"); isPct {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p < 0 || p > 100 {
			return Amount{}, fmt.Errorf("%q is not a percentage in [0, 100]", value)
		}
		return Amount{Percentage: p / 100}, nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil || q.Sign() < 0 {
		return Amount{}, fmt.Errorf("%q is not a non-negative quantity", value)
	}
	return Amount{Quantity: &q}, nil
}

// EvictionFlags are the kubelet's threshold flags, in its syntax.
type EvictionFlags struct {
	Hard            string // memory.available<100Mi,nodefs.available<10%
	Soft            string // memory.available<300Mi
	SoftGracePeriod string // memory.available=1m30s
	MinimumReclaim  string // memory.available=0Mi,nodefs.available=500Mi
}

// ParseThresholdConfig reads the threshold flags as the kubelet's ParseThresholdConfig:
// the hard thresholds, then the soft ones, each of which needs a grace period, and the
// minimum reclaims applied to every threshold of their signal.
func ParseThresholdConfig(f EvictionFlags) ([]Threshold, error) {
	hard, err := ParseThresholds(f.Hard)
	if err != nil {
		return nil, fmt.Errorf("--eviction-hard: %w", err)
	}
	soft, err := ParseThresholds(f.Soft)
	if err != nil {
		return nil, fmt.Errorf("--eviction-soft: %w", err)
	}
	grace, err := parseSignalMap("--eviction-soft-grace-period", f.SoftGracePeriod, func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err == nil && d < 0 {
			err = errors.New("must be a positive value")
		}
		return d, err
	})
	if err != nil {
		return nil, err
	}
	reclaims, err := parseSignalMap("--eviction-minimum-reclaim", f.MinimumReclaim, parseAmount)
	if err != nil {
		return nil, err
	}
	for i := range soft {
		period, found := grace[soft[i].Signal]
		if !found {
			return nil, fmt.Errorf("grace period must be specified for the soft eviction threshold %s", soft[i].Signal)
		}
		soft[i].GracePeriod = period
	}
	all := append(hard, soft...)
	for i := range all {
		if r, ok := reclaims[all[i].Signal]; ok {
			all[i].MinReclaim = &r
		}
	}
	return all, nil
}

// parseSignalMap reads "signal=value,..." with parse for the values.
func parseSignalMap[V any](flag, s string, parse func(string) (V, error)) (map[string]V, error) {
	out := map[string]V{}
	err := eachStatement(s, "=", flag, func(signal, value string) error {
		if _, dup := out[signal]; dup {
			return fmt.Errorf("duplicate value for signal %s", signal)
		}
		v, err := parse(value)
		out[signal] = v
		return err
	})
	return out, err
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

// Pressure turns samples into the node's pressure conditions and the thresholds to act
// on, as the kubelet's eviction manager does: a threshold is met while its signal is
// below it, or, once acted on, until the signal is its minimum reclaim above it; a
// condition is on while a threshold of its signals is met and for the transition period
// after; a threshold is acted on once met for its grace period.
type Pressure struct {
	thresholds []Threshold
	period     time.Duration

	mu        sync.Mutex
	firstSeen map[int]time.Time // by index in thresholds: when it was first met, for those met now
	acting    map[int]bool      // the thresholds acted on at the last observation
	lastSeen  map[Condition]time.Time
	crossed   map[Condition][]string // the thresholds met in the last sample
}

// NewPressure watches thresholds.
func NewPressure(thresholds []Threshold, period time.Duration) *Pressure {
	return &Pressure{thresholds: thresholds, period: period, firstSeen: map[int]time.Time{},
		acting: map[int]bool{}, lastSeen: map[Condition]time.Time{}, crossed: map[Condition][]string{}}
}

// Crossing is a threshold a sample crosses: the signal's available amount is below min.
type Crossing struct {
	Threshold
	Condition Condition
	Available int64
	Capacity  int64
	Min       int64 // the threshold in the signal's unit (bytes, inodes, pids)
}

// crossing is t against s, and whether it is met; with reclaim, the signal must also be
// t's minimum reclaim above the threshold for it not to be.
func crossing(s *statsapi.Summary, t Threshold, reclaim bool) (Crossing, bool) {
	available, capacity, ok := observe(s, t.Signal)
	if !ok {
		return Crossing{}, false
	}
	c := Crossing{Threshold: t, Condition: signalCondition[t.Signal], Available: available, Capacity: capacity, Min: t.Of(capacity)}
	bar := c.Min
	if reclaim && t.MinReclaim != nil {
		bar += t.MinReclaim.Of(capacity)
	}
	return c, available < bar
}

// Observe records the thresholds s meets at now, and returns those to act on: met for
// their grace period.
func (p *Pressure) Observe(s *statsapi.Summary, now time.Time) []Crossing {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.crossed = map[Condition][]string{}
	firstSeen, acting := map[int]time.Time{}, map[int]bool{}
	var act []Crossing
	for i, t := range p.thresholds {
		c, met := crossing(s, t, p.acting[i])
		if !met {
			continue
		}
		p.lastSeen[c.Condition] = now
		msg := fmt.Sprintf("%s: %d available < %d", c.Signal, c.Available, c.Min)
		if c.Available >= c.Min {
			msg = fmt.Sprintf("%s: %d available, not yet %d above %d (minimum reclaim)", c.Signal, c.Available, t.MinReclaim.Of(c.Capacity), c.Min)
		}
		p.crossed[c.Condition] = append(p.crossed[c.Condition], msg)
		first, ok := p.firstSeen[i]
		if !ok {
			first = now
		}
		firstSeen[i] = first
		if now.Sub(first) >= t.GracePeriod {
			acting[i] = true
			act = append(act, c)
		}
	}
	p.firstSeen, p.acting = firstSeen, acting
	return act
}

// MetAfterReclaim reports whether s meets a threshold, each with its minimum reclaim,
// whatever its grace period: the kubelet's check after it reclaimed node-level resources
// (reclaimNodeLevelResources), whose answer no says no pod need go. It records nothing.
func (p *Pressure) MetAfterReclaim(s *statsapi.Summary) bool {
	for _, t := range p.thresholds {
		if _, met := crossing(s, t, true); met {
			return true
		}
	}
	return false
}

// Thresholds are the thresholds watched.
func (p *Pressure) Thresholds() []Threshold { return p.thresholds }

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

// Maps are the flags as the kubelet's configuration holds them (evictionHard,
// evictionSoft, evictionSoftGracePeriod, evictionMinimumReclaim): signal → value. The
// flags are assumed valid (ParseThresholdConfig); a statement that is not is left out.
func (f EvictionFlags) Maps() (hard, soft, softGracePeriod, minimumReclaim map[string]string) {
	signalMap := func(s, op string) map[string]string {
		out := map[string]string{}
		_ = eachStatement(s, op, "", func(signal, value string) error { out[signal] = value; return nil })
		return out
	}
	return signalMap(f.Hard, "<"), signalMap(f.Soft, "<"), signalMap(f.SoftGracePeriod, "="), signalMap(f.MinimumReclaim, "=")
}
