package benchapi

import (
	"bytes"
	"context"
	"fmt"
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Metrics are a server's /metrics, parsed.
type Metrics map[string]*dto.MetricFamily

// ScrapeMetrics reads the /metrics of the server c talks to (miniapi's or kube-apiserver's).
func ScrapeMetrics(ctx context.Context, c rest.Interface) (Metrics, error) {
	data, err := c.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	m, err := ParseMetrics(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	return m, nil
}

// ParseMetrics reads metrics in Prometheus' text format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(r)
}

// Histogram is the sum and count of histogram name over its series whose labels hold
// pairs (name, value, name, value...).
func (m Metrics) Histogram(name string, pairs ...string) (sum, count float64) {
	for _, s := range m[name].GetMetric() {
		if HasLabels(s, pairs...) {
			sum += s.GetHistogram().GetSampleSum()
			count += float64(s.GetHistogram().GetSampleCount())
		}
	}
	return sum, count
}

// HasLabels tells whether a series' labels hold pairs (name, value, name, value...).
func HasLabels(m *dto.Metric, pairs ...string) bool {
	want := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		want[pairs[i]] = pairs[i+1]
	}
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			delete(want, l.GetName())
		}
	}
	return len(want) == 0
}
