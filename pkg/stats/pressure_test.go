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
