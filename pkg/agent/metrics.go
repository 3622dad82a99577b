package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
)

// metrics are what minilet serves on /metrics, in a registry of its own.
type metrics struct {
	registry     *prometheus.Registry
	runningPods  prometheus.Gauge
	syncDuration *prometheus.HistogramVec
	syncErrors   *prometheus.CounterVec
	probes       *prometheus.CounterVec
	probeTime    *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "minilet_running_pods",
			Help: "Number of pods that have a running sandbox.",
		}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "minilet_pod_sync_duration_seconds",
			Help:    "Duration of one pod sync by its pod worker, by operation (sync, terminate).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"operation"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minilet_pod_sync_errors_total",
			Help: "Number of pod syncs that failed, by operation (sync, terminate).",
		}, []string{"operation"}),
		// The kubelet's prober metrics, by name.
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "prober_probe_total",
			Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace"}),
		probeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "prober_probe_duration_seconds",
			Help:    "Duration in seconds for a probe response.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
	m.registry.MustRegister(m.runningPods, m.syncDuration, m.syncErrors, m.probes, m.probeTime,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observeSync(operation string, start time.Time, err error) {
	m.syncDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
	if err != nil {
		m.syncErrors.WithLabelValues(operation).Inc()
	}
}

// probeObserver records the attempts of one probe worker (a single goroutine): its series
// are looked up once (per result) rather than at every probe, which hashed five label
// values twice per probe.
func (m *metrics) probeObserver(kind string, pod *corev1.Pod, container string) func(result string, took time.Duration) {
	duration := m.probeTime.WithLabelValues(kind, container, pod.Name, pod.Namespace)
	counters := map[string]prometheus.Counter{}
	return func(result string, took time.Duration) {
		c, ok := counters[result]
		if !ok {
			c = m.probes.WithLabelValues(kind, result, container, pod.Name, pod.Namespace)
			counters[result] = c
		}
		c.Inc()
		duration.Observe(took.Seconds())
	}
}
