package eviction

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minik8s/minik8s/pkg/stats"
)

// Admission under pressure follows the kubelet's eviction admit handler.
func TestAdmit(t *testing.T) {
	th, err := stats.ParseThresholds("memory.available<100Mi,nodefs.available<10%")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	observe := func(memAvail, fsAvail uint64) Admission {
		p := stats.NewPressure(th, time.Minute)
		ws, fsCap := uint64(900*mi), uint64(100*mi)
		p.Observe(&statsapi.Summary{Node: statsapi.NodeStats{
			Memory: &statsapi.MemoryStats{AvailableBytes: &memAvail, WorkingSetBytes: &ws},
			Fs:     &statsapi.FsStats{AvailableBytes: &fsAvail, CapacityBytes: &fsCap}}}, now)
		return Admission{Pressure: p, Now: func() time.Time { return now }}
	}
	bestEffort, burstable := pod("best-effort", 0, 0, 0), pod("burstable", 10, 0, 0)
	tolerating := pod("tolerating", 0, 0, 0)
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	critical := pod("critical", 0, 0, 2000000000)

	for _, tc := range []struct {
		name    string
		adm     Admission
		pod     *corev1.Pod
		wantMsg string // "": admitted
	}{
		{"no pressure", observe(500*mi, 50*mi), bestEffort, ""},
		{"memory pressure, best effort", observe(50*mi, 50*mi), bestEffort, "The node had condition: [MemoryPressure]. "},
		{"memory pressure, burstable", observe(50*mi, 50*mi), burstable, ""},
		{"memory pressure, tolerated", observe(50*mi, 50*mi), tolerating, ""},
		{"memory pressure, critical", observe(50*mi, 50*mi), critical, ""},
		{"disk pressure, burstable", observe(500*mi, 5*mi), burstable, "The node had condition: [DiskPressure]. "},
		{"disk pressure, tolerating memory pressure", observe(500*mi, 5*mi), tolerating, "The node had condition: [DiskPressure]. "},
		{"both, burstable", observe(50*mi, 5*mi), burstable, "The node had condition: [MemoryPressure DiskPressure]. "},
		{"disk pressure, critical", observe(500*mi, 5*mi), critical, ""},
	} {
		ok, reason, msg := tc.adm.Admit(tc.pod)
		switch {
		case tc.wantMsg == "" && !ok:
			t.Errorf("%s: rejected: %s %q", tc.name, reason, msg)
		case tc.wantMsg != "" && (ok || reason != "Evicted" || msg != tc.wantMsg):
			t.Errorf("%s: admitted %v, %s %q; want Evicted %q", tc.name, ok, reason, msg, tc.wantMsg)
		}
	}
}
