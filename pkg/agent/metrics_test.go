package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/probe"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProbeObserver: a worker's observer counts each result under the kubelet's labels
// (successful, failed; an error is not counted) and times the successful ones, with its
// series looked up once.
func TestProbeObserver(t *testing.T) {
	m := newMetrics()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	observe := m.probeObserver("Liveness", pod, "app")
	observe(probe.Success, 2*time.Millisecond)
	observe(probe.Warning, 3*time.Millisecond)
	observe(probe.Failure, time.Second)
	observe(probe.Unknown, time.Second) // the probe could not run: the kubelet throws the result away
	want := `
# HELP prober_probe_total Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="app",namespace="ns",pod="web",probe_type="Liveness",result="failed"} 1
prober_probe_total{container="app",namespace="ns",pod="web",probe_type="Liveness",result="successful"} 2
`
	if err := testutil.GatherAndCompare(m.registry, strings.NewReader(want), "prober_probe_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.probeTime); n != 1 {
		t.Errorf("probe duration series = %d, want 1", n)
	}
	if got := histogramCount(t, m); got != 2 { // the kubelet times successful probes only
		t.Errorf("probe durations observed = %d, want 2", got)
	}
}

func histogramCount(t *testing.T, m *metrics) uint64 {
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "prober_probe_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no prober_probe_duration_seconds")
	return 0
}
