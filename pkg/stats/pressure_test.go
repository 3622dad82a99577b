package stats

import (
	"strings"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestParseThresholds(t *testing.T) {
	got, err := ParseThresholds(DefaultEvictionHard)
	if err != nil || len(got) != 5 {
		t.Fatalf("defaults: %v, %v", got, err)
	}
	if got[0].Signal != "memory.available" || got[0].Quantity.Value() != 100<<20 || got[1].Percentage != 0.10 {
		t.Errorf("parsed %+v %+v", got[0], got[1])
	}
	for _, bad := range []string{"memory.available>1Gi", "memory.free<1Gi", "nodefs.available<110%", "memory.available<lots"} {
		if _, err := ParseThresholds(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func summary(memAvail, memWS, fsAvail, fsCap uint64, maxPID, procs int64) *statsapi.Summary {
	return &statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{AvailableBytes: &memAvail, WorkingSetBytes: &memWS},
		Fs:     &statsapi.FsStats{AvailableBytes: &fsAvail, CapacityBytes: &fsCap},
		Rlimit: &statsapi.RlimitStats{MaxPID: &maxPID, NumOfRunningProcesses: &procs},
	}}
}

func TestPressure(t *testing.T) {
	th, err := ParseThresholds(DefaultEvictionHard + ",pid.available<1000")
	if err != nil {
		t.Fatal(err)
	}
	p := NewPressure(th, time.Minute)
	now := time.Now()
	p.Observe(summary(8<<30, 8<<30, 50<<30, 100<<30, 32768, 100), now)
	for _, c := range []Condition{MemoryPressure, DiskPressure, PIDPressure} {
		if under, _ := p.Under(c, now); under {
			t.Errorf("%s with plenty of everything", c)
		}
	}
	// 50 MiB free memory, 5% of the disk, 200 PIDs left.
	p.Observe(summary(50<<20, 16<<30, 5<<30, 100<<30, 32768, 32568), now)
	for _, c := range []Condition{MemoryPressure, DiskPressure, PIDPressure} {
		under, crossed := p.Under(c, now)
		if !under || len(crossed) != 1 {
			t.Errorf("%s: under %v, crossed %v", c, under, crossed)
		}
	}
	if _, crossed := p.Under(DiskPressure, now); !strings.HasPrefix(crossed[0], "nodefs.available: ") {
		t.Errorf("disk pressure from %v", crossed)
	}
	// Relieved: the condition holds for the transition period, then goes.
	p.Observe(summary(8<<30, 8<<30, 50<<30, 100<<30, 32768, 100), now.Add(time.Second))
	if under, _ := p.Under(MemoryPressure, now.Add(30*time.Second)); !under {
		t.Error("memory pressure gone before the transition period")
	}
	if under, _ := p.Under(MemoryPressure, now.Add(61*time.Second)); under {
		t.Error("memory pressure stays after the transition period")
	}
}

func TestParseThresholdConfig(t *testing.T) {
	got, err := ParseThresholdConfig(EvictionFlags{
		Hard: "memory.available<100Mi", Soft: "memory.available<300Mi,nodefs.available<15%",
		SoftGracePeriod: "memory.available=1m30s,nodefs.available=2m", MinimumReclaim: "memory.available=50Mi,nodefs.available=5%",
	})
	if err != nil || len(got) != 3 {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	hard, soft, disk := got[0], got[1], got[2]
	if !hard.Hard() || hard.Quantity.Value() != 100<<20 || hard.MinReclaim.Quantity.Value() != 50<<20 {
		t.Errorf("hard threshold %+v", hard)
	}
	if soft.Hard() || soft.GracePeriod != 90*time.Second || soft.Quantity.Value() != 300<<20 || soft.MinReclaim.Quantity.Value() != 50<<20 {
		t.Errorf("soft threshold %+v", soft)
	}
	if disk.GracePeriod != 2*time.Minute || disk.MinReclaim.Percentage != 0.05 {
		t.Errorf("soft disk threshold %+v", disk)
	}
	for _, bad := range []struct {
		flags EvictionFlags
		want  string
	}{
		{EvictionFlags{Soft: "memory.available<300Mi"}, "grace period must be specified for the soft eviction threshold memory.available"},
		{EvictionFlags{Soft: "memory.available<300Mi", SoftGracePeriod: "memory.available=soon"}, "--eviction-soft-grace-period"},
		{EvictionFlags{Soft: "memory.available<300Mi", SoftGracePeriod: "memory.available=-1s"}, "must be a positive value"},
		{EvictionFlags{SoftGracePeriod: "memory.free=1s"}, `unknown signal "memory.free"`},
		{EvictionFlags{MinimumReclaim: "memory.available=-1Mi"}, "--eviction-minimum-reclaim"},
		{EvictionFlags{MinimumReclaim: "memory.available"}, "want signal=value"},
		{EvictionFlags{Hard: "memory.available<1Mi,memory.available<2Mi"}, "found duplicate eviction threshold for signal memory.available"},
		{EvictionFlags{Soft: "memory.available>1Mi"}, "--eviction-soft"},
	} {
		if _, err := ParseThresholdConfig(bad.flags); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: error %v, want one with %q", bad.flags, err, bad.want)
		}
	}
}

// A soft threshold raises its condition at once but is acted on only once crossed for
// its whole grace period; a sample above it starts the period over.
func TestPressureSoftGracePeriod(t *testing.T) {
	th, err := ParseThresholdConfig(EvictionFlags{Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=30s"})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPressure(th, time.Minute)
	now := time.Now()
	low, plenty := summary(512<<20, 8<<30, 50<<30, 100<<30, 32768, 100), summary(4<<30, 4<<30, 50<<30, 100<<30, 32768, 100)
	if act := p.Observe(low, now); len(act) != 0 {
		t.Errorf("acted on a soft threshold at once: %+v", act)
	}
	if under, _ := p.Under(MemoryPressure, now); !under {
		t.Error("no MemoryPressure while a soft threshold is crossed")
	}
	if act := p.Observe(low, now.Add(20*time.Second)); len(act) != 0 {
		t.Errorf("acted 20s into a 30s grace period: %+v", act)
	}
	p.Observe(plenty, now.Add(25*time.Second))
	if act := p.Observe(low, now.Add(40*time.Second)); len(act) != 0 {
		t.Errorf("acted although the threshold was relieved 15s ago: %+v", act)
	}
	act := p.Observe(low, now.Add(70*time.Second))
	if len(act) != 1 || act[0].Hard() || act[0].Min != 1<<30 || act[0].Available != 512<<20 {
		t.Errorf("after 30s crossed: act on %+v", act)
	}
}

// Once acted on, a threshold with a minimum reclaim stays met until the signal is that
// much above it; one never acted on (still in its grace period) does not.
func TestPressureMinimumReclaim(t *testing.T) {
	th, err := ParseThresholdConfig(EvictionFlags{Hard: "memory.available<1Gi", MinimumReclaim: "memory.available=500Mi"})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPressure(th, time.Nanosecond)
	now := time.Now()
	mem := func(avail uint64) *statsapi.Summary { return summary(avail, 8<<30-avail, 50<<30, 100<<30, 32768, 100) }
	if act := p.Observe(mem(1<<30+100<<20), now); len(act) != 0 {
		t.Errorf("met above the threshold before it was ever crossed: %+v", act)
	}
	if act := p.Observe(mem(900<<20), now); len(act) != 1 {
		t.Fatalf("not met below it: %+v", act)
	}
	if act := p.Observe(mem(1<<30+100<<20), now); len(act) != 1 {
		t.Errorf("relieved 100Mi above the threshold, short of the 500Mi reclaim: %+v", act)
	}
	if under, crossed := p.Under(MemoryPressure, now); !under || !strings.Contains(crossed[0], "minimum reclaim") {
		t.Errorf("pressure while reclaiming: %v %v", under, crossed)
	}
	if act := p.Observe(mem(1<<30+600<<20), now); len(act) != 0 {
		t.Errorf("still met 600Mi above the threshold: %+v", act)
	}
	if act := p.Observe(mem(1<<30+100<<20), now); len(act) != 0 {
		t.Errorf("met again above the threshold once reclaimed: %+v", act)
	}
}

// After a node-level reclaim a threshold counts as met until the signal is its minimum
// reclaim above it, grace period or not, and the check changes no state.
func TestPressureMetAfterReclaim(t *testing.T) {
	th, err := ParseThresholdConfig(EvictionFlags{Hard: "memory.available<100Mi", Soft: "nodefs.available<10Gi",
		SoftGracePeriod: "nodefs.available=1h", MinimumReclaim: "nodefs.available=5Gi"})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPressure(th, time.Minute)
	disk := func(avail uint64) *statsapi.Summary { return summary(1<<30, 1<<30, avail, 100<<30, 32768, 100) }
	for _, c := range []struct {
		avail uint64
		want  bool
	}{{9 << 30, true}, {12 << 30, true}, {15<<30 + 1, false}} {
		if got := p.MetAfterReclaim(disk(c.avail)); got != c.want {
			t.Errorf("%d GiB available: met %v, want %v", c.avail>>30, got, c.want)
		}
	}
	if under, _ := p.Under(DiskPressure, time.Now()); under {
		t.Error("MetAfterReclaim put the node under pressure")
	}
}
