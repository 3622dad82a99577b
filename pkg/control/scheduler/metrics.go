package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are kube-scheduler's metrics of the same names.
type Metrics struct {
	attempts   *prometheus.CounterVec
	attemptDur *prometheus.HistogramVec
	e2eDur     *prometheus.HistogramVec
	pending    *prometheus.GaugeVec
	preemption prometheus.Counter
	victims    prometheus.Histogram
}

// NewMetrics registers the scheduler's metrics once per process (a scheduler started
// again after regaining leadership reuses them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scheduler_schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem."},
			[]string{"result", "profile"}),
		attemptDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "scheduler_scheduling_attempt_duration_seconds",
			Help: "Scheduling attempt latency in seconds (scheduling algorithm + binding)", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)},
			[]string{"result", "profile"}),
		e2eDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "scheduler_pod_scheduling_sli_duration_seconds",
			Help: "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve multiple scheduling attempts.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 20)},
			[]string{"attempts"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "scheduler_pending_pods",
			Help: "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated."},
			[]string{"queue"}),
		preemption: prometheus.NewCounter(prometheus.CounterOpts{Name: "scheduler_preemption_attempts_total", Help: "Total preemption attempts in the cluster till now"}),
		victims: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "scheduler_preemption_victims", Help: "Number of selected preemption victims",
			Buckets: prometheus.ExponentialBuckets(1, 2, 7)}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.attemptDur, m.e2eDur, m.pending, m.preemption, m.victims)
	}
	return m
}
