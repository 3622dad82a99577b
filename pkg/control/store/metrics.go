package store

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	commitDuration prometheus.Histogram
	batchSize      prometheus.Histogram
	slowWatchers   prometheus.Counter
	revision       prometheus.GaugeFunc
	watchers       prometheus.GaugeFunc
}

func newMetrics(revision func() int64, watchers func() int) *metrics {
	return &metrics{
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "minik8s_store_commit_duration_seconds",
			Help:    "Time to commit one write transaction (a group of writes) including fsync.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "minik8s_store_commit_batch_writes",
			Help:    "Writes that shared one commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		slowWatchers: newCounter("minik8s_store_slow_watchers_closed_total", "Watches closed because they fell too far behind."),
		revision:     newGaugeFunc("minik8s_store_revision", "Current store revision.", func() float64 { return float64(revision()) }),
		watchers:     newGaugeFunc("minik8s_store_watchers", "Open store watches.", func() float64 { return float64(watchers()) }),
	}
}

func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func newGaugeFunc(name, help string, value func() float64) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value)
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.commitDuration, m.batchSize, m.slowWatchers, m.revision, m.watchers}
}
