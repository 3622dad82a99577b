package podautoscaler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// MetricsSource reads the pods' resource usage, what metrics.k8s.io serves.
type MetricsSource interface {
	// PodMetrics is each matching pod's usage of resource (of one container if named), in
	// milli-units.
	PodMetrics(ctx context.Context, namespace string, selector labels.Selector, resource corev1.ResourceName, container string) (podMetrics, error)
}

// ResourceMetrics reads metrics.k8s.io (miniapi serves it itself: pkg/control/metricsapi).
type ResourceMetrics struct{ Client metricsclient.Interface }

// PodMetrics implements MetricsSource with kube-controller-manager's error wording.
func (m ResourceMetrics) PodMetrics(ctx context.Context, namespace string, selector labels.Selector, resource corev1.ResourceName, container string) (podMetrics, error) {
	list, err := m.Client.MetricsV1beta1().PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("unable to get metrics for resource %s: unable to fetch metrics from resource metrics API: %v", resource, err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("unable to get metrics for resource %s: no metrics returned from resource metrics API", resource)
	}
	out := podMetrics{}
	for _, pm := range list.Items {
		var sum int64
		found := false
		for _, c := range pm.Containers {
			if container != "" && c.Name != container {
				continue
			}
			if v, ok := c.Usage[resource]; ok {
				sum += v.MilliValue()
				found = true
			}
		}
		if found { // a pod missing the resource counts as a pod without samples
			out[pm.Name] = podMetric{value: sum, timestamp: pm.Timestamp.Time, window: pm.Window.Duration}
		}
	}
	return out, nil
}
