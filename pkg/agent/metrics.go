package agent

import (
	"time"

	"github.com/minik8s/minik8s/pkg/probe"
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

// probeObserver records the attempts of one probe worker (a single goroutine) as the
// kubelet's worker does: successful (warnings too) and failed ones counted, only the
// successful ones timed, and a probe that could not run not counted at all. Its series
// are looked up once rather than at every probe, which hashed five label values twice per
// probe.
func (m *metrics) probeObserver(kind string, pod *corev1.Pod, container string) func(result probe.Result, took time.Duration) {
	duration := m.probeTime.WithLabelValues(kind, container, pod.Name, pod.Namespace)
	counters := map[string]prometheus.Counter{}
	return func(result probe.Result, took time.Duration) {
		var label string
		switch result {
		case probe.Success, probe.Warning:
			label = "successful"
		case probe.Failure:
			label = "failed"
		default:
			return
		}
		c, ok := counters[label]
		if !ok {
			c = m.probes.WithLabelValues(kind, label, container, pod.Name, pod.Namespace)
			counters[label] = c
		}
		c.Inc()
		if label == "successful" {
			duration.Observe(took.Seconds())
		}
	}
}
