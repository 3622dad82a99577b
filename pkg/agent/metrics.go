package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are what minilet serves on /metrics, in a registry of its own.
type metrics struct {
	registry     *prometheus.Registry
	runningPods  prometheus.Gauge
	syncDuration *prometheus.HistogramVec
	syncErrors   *prometheus.CounterVec
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
	}
	m.registry.MustRegister(m.runningPods, m.syncDuration, m.syncErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observeSync(operation string, start time.Time, err error) {
	m.syncDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
	if err != nil {
		m.syncErrors.WithLabelValues(operation).Inc()
	}
}
