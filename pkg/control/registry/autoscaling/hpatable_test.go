package autoscaling

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestHPATargets: the TARGETS column reads as kube's printer (formatHPAMetrics) writes it:
// resource metrics by name, pods, object and external ones by value only, "(avg)" after
// an object's or external metric's average, "<unknown>" before a status, two at most.
func TestHPATargets(t *testing.T) {
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	avg := func(s string) autoscalingv2.MetricTarget {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q(s)}
	}
	value := func(s string) autoscalingv2.MetricTarget {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q(s)}
	}
	util := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}
	id := autoscalingv2.MetricIdentifier{Name: "qps"}
	ref := autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "web"}
	specs := map[string]autoscalingv2.MetricSpec{
		"resource":       {Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu", Target: util}},
		"resource avg":   {Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "memory", Target: avg("100Mi")}},
		"container":      {Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: "cpu", Container: "app", Target: util}},
		"pods":           {Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: id, Target: avg("10")}},
		"object value":   {Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{Metric: id, DescribedObject: ref, Target: value("5")}},
		"object avg":     {Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{Metric: id, DescribedObject: ref, Target: avg("5")}},
		"external value": {Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: value("7")}},
		"external avg":   {Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: avg("7")}},
	}
	for _, tc := range []struct {
		name, want string
		status     *autoscalingv2.MetricStatus
	}{
		{"resource", "cpu: <unknown>/50%", nil},
		{"resource", "cpu: 20%/50%", &autoscalingv2.MetricStatus{Resource: &autoscalingv2.ResourceMetricStatus{Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](20)}}}},
		{"resource avg", "memory: 50Mi/100Mi", &autoscalingv2.MetricStatus{Resource: &autoscalingv2.ResourceMetricStatus{Current: autoscalingv2.MetricValueStatus{AverageValue: q("50Mi")}}}},
		{"container", "cpu: <unknown>/50%", nil},
		{"pods", "<unknown>/10", nil},
		{"pods", "3/10", &autoscalingv2.MetricStatus{Pods: &autoscalingv2.PodsMetricStatus{Current: autoscalingv2.MetricValueStatus{AverageValue: q("3")}}}},
		{"object value", "<unknown>/5", nil},
		{"object value", "4/5", &autoscalingv2.MetricStatus{Object: &autoscalingv2.ObjectMetricStatus{Current: autoscalingv2.MetricValueStatus{Value: q("4")}}}},
		{"object avg", "<unknown>/5 (avg)", nil},
		{"external value", "<unknown>/7", nil},
		{"external avg", "2/7 (avg)", &autoscalingv2.MetricStatus{External: &autoscalingv2.ExternalMetricStatus{Current: autoscalingv2.MetricValueStatus{AverageValue: q("2")}}}},
	} {
		var statuses []autoscalingv2.MetricStatus
		if tc.status != nil {
			statuses = []autoscalingv2.MetricStatus{*tc.status}
		}
		if got := hpaTargets([]autoscalingv2.MetricSpec{specs[tc.name]}, statuses); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	three := []autoscalingv2.MetricSpec{specs["resource"], specs["pods"], specs["external avg"]}
	if got, want := hpaTargets(three, nil), "cpu: <unknown>/50%, <unknown>/10 + 1 more..."; got != want {
		t.Errorf("three metrics: %q, want %q", got, want)
	}
	if got := hpaTargets(nil, nil); got != "<none>" {
		t.Errorf("no metrics: %q", got)
	}
}
