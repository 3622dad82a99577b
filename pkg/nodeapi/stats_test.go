package nodeapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minik8s/minik8s/pkg/stats"
)

type fixedStats struct{ snap *stats.Snapshot }

func (f fixedStats) Latest() *stats.Snapshot { return f.snap }

func u64(v uint64) *uint64 { return &v }

// The stats endpoints answer from the latest sample: the whole summary, the CPU and
// memory cut metrics-server asks for, and the kubelet's resource metrics.
func TestStatsEndpoints(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	cpu := &statsapi.CPUStats{Time: now, UsageNanoCores: u64(5e8), UsageCoreNanoSeconds: u64(3e9)}
	mem := &statsapi.MemoryStats{Time: now, WorkingSetBytes: u64(64 << 20)}
	fs := &statsapi.FsStats{Time: now, UsedBytes: u64(4096)}
	snap := &stats.Snapshot{Summary: statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: "n1", CPU: cpu, Memory: mem, Fs: fs},
		Pods: []statsapi.PodStats{{PodRef: statsapi.PodReference{Name: "web", Namespace: "default", UID: "u1"}, CPU: cpu, Memory: mem,
			EphemeralStorage: fs, Containers: []statsapi.ContainerStats{{Name: "app", StartTime: now, CPU: cpu, Memory: mem, Rootfs: fs}}}},
	}}
	get := func(st Stats, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		New(Config{NodeName: "n1"}, nil, nil, func() error { return nil }, st, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	if rec := get(fixedStats{}, "/stats/summary"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("before the first sample: %d", rec.Code)
	}
	var full, cut statsapi.Summary
	if err := json.Unmarshal(get(fixedStats{snap}, "/stats/summary").Body.Bytes(), &full); err != nil || full.Node.Fs == nil || full.Pods[0].Containers[0].Rootfs == nil {
		t.Errorf("summary: %v %+v", err, full)
	}
	if err := json.Unmarshal(get(fixedStats{snap}, "/stats/summary?only_cpu_and_memory=true").Body.Bytes(), &cut); err != nil ||
		cut.Node.Fs != nil || cut.Pods[0].EphemeralStorage != nil || cut.Pods[0].Containers[0].Rootfs != nil ||
		*cut.Pods[0].Containers[0].CPU.UsageNanoCores != 5e8 || *cut.Node.Memory.WorkingSetBytes != 64<<20 {
		t.Errorf("only_cpu_and_memory: %v %+v", err, cut)
	}
	body := get(fixedStats{snap}, "/metrics/resource").Body.String()
	for _, want := range []string{
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 3 1700000000000`,
		`container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 6.7108864e+07 1700000000000`,
		`node_cpu_usage_seconds_total 3 1700000000000`,
		`pod_memory_working_set_bytes{namespace="default",pod="web"} 6.7108864e+07 1700000000000`,
		`resource_scrape_error 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics/resource lacks %s:\n%s", want, body)
		}
	}
}
