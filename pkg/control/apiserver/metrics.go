package apiserver

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/legacyregistry"
)

// upstreamMetrics are the metrics k8s.io/apiserver's own admission plugins and
// apiextensions-apiserver's conversion webhook converter keep in component-base's legacy
// registry, as kube-apiserver serves them from there; the registry's Go and process
// collectors are left out, as ours has its own.
var upstreamMetrics = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	kept := families[:0]
	for _, f := range families {
		if slices.ContainsFunc(upstreamMetricPrefixes, func(p string) bool { return strings.HasPrefix(f.GetName(), p) }) {
			kept = append(kept, f)
		}
	}
	return kept, err
})

var upstreamMetricPrefixes = []string{
	"apiserver_admission_",                   // admission webhooks and policies
	"apiserver_validating_admission_policy_", // ValidatingAdmissionPolicy
	"apiserver_crd_conversion_webhook_",      // conversion webhooks, per CustomResourceDefinition
	"apiserver_conversion_webhook_",          // conversion webhook requests
}

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	watchers prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total", Help: "API requests by verb, resource and HTTP code.",
		}, []string{"verb", "group", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds", Help: "API request latency by verb and resource (watches excluded).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"verb", "group", "resource"}),
		watchers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apiserver_registered_watchers", Help: "Open watch streams.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.watchers)
	return m
}

type requestLabelsKey struct{}

// recorder captures the status code of a response.
type recorder struct {
	http.ResponseWriter
	code int
	info *requestInfo
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (the proxy's upgrades to exec and port-forward
// streams) reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// instrument counts and times every resource request.
func (m *metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(withRecorder(r, rec)))
		if rec.info == nil {
			return
		}
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		i := rec.info
		m.requests.WithLabelValues(i.Verb, i.GroupVersion.Group, i.Resource, i.Subresource, strconv.Itoa(code)).Inc()
		if i.Verb != "watch" {
			m.latency.WithLabelValues(i.Verb, i.GroupVersion.Group, i.Resource).Observe(time.Since(start).Seconds())
		}
	})
}

func withRecorder(r *http.Request, rec *recorder) context.Context {
	return context.WithValue(r.Context(), requestLabelsKey{}, rec)
}

// observeResource tells the instrumenting wrapper which resource a request addressed.
func (m *metrics) observeResource(r *http.Request, info requestInfo) {
	if rec, ok := r.Context().Value(requestLabelsKey{}).(*recorder); ok {
		rec.info = &info
	}
}

// objectCounts are kube-apiserver's counts of stored objects per resource:
// apiserver_resource_objects{group,resource} and the deprecated apiserver_storage_objects
// {resource="RESOURCE.GROUP"} beside it, -1 where the count failed. Counted from the store
// (its watch cache) when scraped; kube-apiserver counts once a minute.
type objectCounts struct {
	store          store.Interface
	reg            *registry.Registry
	byGroup, byOld *prometheus.Desc
}

func newObjectCounts(st store.Interface, reg *registry.Registry) *objectCounts {
	const help = "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1."
	return &objectCounts{store: st, reg: reg,
		byGroup: prometheus.NewDesc("apiserver_resource_objects", help, []string{"group", "resource"}, nil),
		byOld:   prometheus.NewDesc("apiserver_storage_objects", "(Deprecated since 1.34.0) "+help, []string{"resource"}, nil),
	}
}

func (o *objectCounts) Describe(ch chan<- *prometheus.Desc) { ch <- o.byGroup; ch <- o.byOld }

func (o *objectCounts) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counted := map[schema.GroupResource]bool{} // the versions of a resource share its objects
	for _, res := range o.reg.Resources() {
		gr := res.GroupResource()
		if counted[gr] || res.Computed != nil {
			continue
		}
		counted[gr] = true
		n := -1.0
		if kvs, _, err := o.store.List(ctx, generic.ListPrefix(res, "")); err == nil {
			n = float64(len(kvs))
		}
		ch <- prometheus.MustNewConstMetric(o.byGroup, prometheus.GaugeValue, n, gr.Group, gr.Resource)
		ch <- prometheus.MustNewConstMetric(o.byOld, prometheus.GaugeValue, n, gr.String())
	}
}
