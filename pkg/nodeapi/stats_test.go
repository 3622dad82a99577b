package nodeapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cadvisorapi "github.com/google/cadvisor/lib/model"
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

// /spec/ serves the node's machine info as the kubelet does, and a failure to read it is
// a 500 naming the cause.
func TestSpec(t *testing.T) {
	want := &cadvisorapi.MachineInfo{NumCores: 3, MemoryCapacity: 1 << 30, BootID: "b1",
		HugePages: []cadvisorapi.HugePagesInfo{{PageSize: 2048, NumPages: 4}}}
	get := func(machine func() (*cadvisorapi.MachineInfo, error), path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		New(Config{NodeName: "n1", Machine: machine}, nil, nil, func() error { return nil }, nil, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	for _, path := range []string{"/spec/", "/spec"} {
		rec := get(func() (*cadvisorapi.MachineInfo, error) { return want, nil }, path)
		var got cadvisorapi.MachineInfo
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK ||
			got.NumCores != 3 || got.MemoryCapacity != 1<<30 || got.BootID != "b1" || len(got.HugePages) != 1 {
			t.Errorf("GET %s: %d %v %s", path, rec.Code, err, rec.Body)
		}
	}
	rec := get(func() (*cadvisorapi.MachineInfo, error) { return nil, errors.New("no /proc/cpuinfo") }, "/spec/")
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "no /proc/cpuinfo") {
		t.Errorf("failing machine info: %d %s", rec.Code, rec.Body)
	}
	if rec := get(nil, "/spec/"); rec.Code != http.StatusNotFound {
		t.Errorf("without machine info: %d", rec.Code)
	}
}

// /configz serves the agent's configuration under "kubeletconfig", as the kubelet's.
func TestConfigz(t *testing.T) {
	rec := httptest.NewRecorder()
	configz := func() any { return map[string]int{"port": 10250} }
	New(Config{NodeName: "n1", Configz: configz}, nil, nil, func() error { return nil }, nil, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/configz", nil))
	if got := strings.TrimSpace(rec.Body.String()); rec.Code != http.StatusOK || got != `{"kubeletconfig":{"port":10250}}` {
		t.Errorf("GET /configz: %d %s", rec.Code, got)
	}
}
