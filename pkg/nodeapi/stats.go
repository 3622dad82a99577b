package nodeapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minik8s/minik8s/pkg/stats"
)

// Stats is the collector's latest sample (pkg/stats).
type Stats interface {
	Latest() *stats.Snapshot
}

// handleStats serves /stats/summary, /metrics/resource and /metrics/cadvisor from the
// latest sample: a request never walks cgroups.
func (s *Server) handleStats(st Stats) {
	s.mux.HandleFunc("GET /stats/summary", func(w http.ResponseWriter, r *http.Request) {
		snap := st.Latest()
		if snap == nil {
			writeError(w, &httpError{code: http.StatusServiceUnavailable, msg: "no stats sampled yet"})
			return
		}
		summary := snap.Summary
		if r.URL.Query().Get("only_cpu_and_memory") == "true" {
			summary = cpuAndMemory(summary)
		}
		writeJSON(w, summary)
	})
	for path, c := range map[string]prometheus.Collector{
		"/metrics/resource": stats.ResourceMetrics{Latest: st.Latest},
		"/metrics/cadvisor": stats.CadvisorMetrics{Latest: st.Latest},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		s.mux.Handle("GET "+path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
}

// cpuAndMemory is the summary cut to CPU and memory, as the kubelet answers
// ?only_cpu_and_memory=true (metrics-server's question).
func cpuAndMemory(s statsapi.Summary) statsapi.Summary {
	out := statsapi.Summary{Node: statsapi.NodeStats{NodeName: s.Node.NodeName, StartTime: s.Node.StartTime,
		CPU: s.Node.CPU, Memory: s.Node.Memory}}
	for _, p := range s.Pods {
		q := statsapi.PodStats{PodRef: p.PodRef, StartTime: p.StartTime, CPU: p.CPU, Memory: p.Memory}
		for _, c := range p.Containers {
			q.Containers = append(q.Containers, statsapi.ContainerStats{Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory})
		}
		out.Pods = append(out.Pods, q)
	}
	return out
}
