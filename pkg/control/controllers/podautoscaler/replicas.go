package podautoscaler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelpers "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
)

// podMetric is one pod's usage of a resource (in milli-units, as the kube-controller-manager
// counts), sampled at timestamp over window.
type podMetric struct {
	value     int64
	timestamp time.Time
	window    time.Duration
}

// podMetrics are usage samples by pod name.
type podMetrics map[string]podMetric

// calculator computes a replica count from pod usage, with kube-controller-manager's rules
// for pods without samples, pods not ready yet and the tolerance around the target.
type calculator struct {
	tolerance float64
	// cpuInitializationPeriod: CPU samples of a pod this young count only once it is ready
	// and sampled a whole window after becoming ready (startup bursts mislead).
	cpuInitializationPeriod time.Duration
	// initialReadinessDelay: a pod that turned unready within this long of starting is
	// taken as never ready yet.
	initialReadinessDelay time.Duration
	now                   func() time.Time
}

// errNoPods is kube-controller-manager's wording.
var errNoPods = errors.New("no pods returned by selector while calculating replica count")

// utilizationReplicas is the replica count that brings the pods' average usage of
// resource to target percent of their requests, with the utilization now and the raw
// average usage (milli-units).
func (c *calculator) utilizationReplicas(current int32, target int32, metrics podMetrics, pods []*corev1.Pod, resource corev1.ResourceName, container string) (replicas int32, utilization int32, rawAverage int64, err error) {
	if len(pods) == 0 {
		return 0, 0, 0, errNoPods
	}
	ready, unready, missing, ignored := c.groupPods(pods, metrics, resource)
	removeMetrics(metrics, ignored)
	removeMetrics(metrics, unready)
	requests, err := podRequests(pods, container, resource)
	if err != nil {
		return 0, 0, 0, err
	}
	if len(metrics) == 0 {
		return 0, 0, 0, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, utilization, rawAverage, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, 0, 0, err
	}
	scaleUpWithUnready := unready.Len() > 0 && ratio > 1.0
	if !scaleUpWithUnready && missing.Len() == 0 {
		if math.Abs(1.0-ratio) <= c.tolerance {
			return current, utilization, rawAverage, nil
		}
		return int32(math.Ceil(ratio * float64(ready))), utilization, rawAverage, nil
	}
	// Assume the worst case for the direction we are going: pods without samples use all
	// they requested when scaling down and nothing when scaling up; unready pods nothing.
	for name := range missing {
		if ratio < 1.0 {
			metrics[name] = podMetric{value: requests[name]}
		} else {
			metrics[name] = podMetric{}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			metrics[name] = podMetric{}
		}
	}
	newRatio, _, _, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, utilization, rawAverage, err
	}
	return settle(current, ratio, newRatio, len(metrics), c.tolerance), utilization, rawAverage, nil
}

// averageValueReplicas is the replica count that brings the pods' average usage of
// resource to target (milli-units), with the average usage now.
func (c *calculator) averageValueReplicas(current int32, target int64, metrics podMetrics, pods []*corev1.Pod, resource corev1.ResourceName) (replicas int32, average int64, err error) {
	if len(pods) == 0 {
		return 0, 0, errNoPods
	}
	ready, unready, missing, ignored := c.groupPods(pods, metrics, resource)
	removeMetrics(metrics, ignored)
	removeMetrics(metrics, unready)
	if len(metrics) == 0 {
		return 0, 0, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, average := averageRatio(metrics, target)
	scaleUpWithUnready := unready.Len() > 0 && ratio > 1.0
	if !scaleUpWithUnready && missing.Len() == 0 {
		if math.Abs(1.0-ratio) <= c.tolerance {
			return current, average, nil
		}
		return int32(math.Ceil(ratio * float64(ready))), average, nil
	}
	for name := range missing {
		if ratio < 1.0 {
			metrics[name] = podMetric{value: target}
		} else {
			metrics[name] = podMetric{}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			metrics[name] = podMetric{}
		}
	}
	newRatio, _ := averageRatio(metrics, target)
	return settle(current, ratio, newRatio, len(metrics), c.tolerance), average, nil
}

// settle is the replica count after the worst-case assumptions: unchanged when they bring
// the ratio within tolerance or turn the direction of the change around.
func settle(current int32, ratio, newRatio float64, samples int, tolerance float64) int32 {
	if math.Abs(1.0-newRatio) <= tolerance || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return current
	}
	replicas := int32(math.Ceil(newRatio * float64(samples)))
	if (newRatio < 1.0 && replicas > current) || (newRatio > 1.0 && replicas < current) {
		return current
	}
	return replicas
}

// groupPods sorts the target's pods: ready ones with samples (counted), unready ones
// (pending, or for CPU not ready long enough to trust the sample), ones without samples,
// and ones to ignore (deleted or failed).
func (c *calculator) groupPods(pods []*corev1.Pod, metrics podMetrics, resource corev1.ResourceName) (ready int, unready, missing, ignored sets.Set[string]) {
	unready, missing, ignored = sets.New[string](), sets.New[string](), sets.New[string]()
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
			ignored.Insert(pod.Name)
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			unready.Insert(pod.Name)
			continue
		}
		metric, found := metrics[pod.Name]
		if !found {
			missing.Insert(pod.Name)
			continue
		}
		if resource == corev1.ResourceCPU && c.cpuUnready(pod, metric) {
			unready.Insert(pod.Name)
			continue
		}
		ready++
	}
	return ready, unready, missing, ignored
}

func (c *calculator) cpuUnready(pod *corev1.Pod, metric podMetric) bool {
	var cond *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			cond = &pod.Status.Conditions[i]
		}
	}
	if cond == nil || pod.Status.StartTime == nil {
		return true
	}
	if pod.Status.StartTime.Add(c.cpuInitializationPeriod).After(c.now()) {
		// Young pod: only a ready one sampled over a whole window since it became ready.
		return cond.Status == corev1.ConditionFalse || metric.timestamp.Before(cond.LastTransitionTime.Add(metric.window))
	}
	// Older pod: unready only if it has never been ready.
	return cond.Status == corev1.ConditionFalse && pod.Status.StartTime.Add(c.initialReadinessDelay).After(cond.LastTransitionTime.Time)
}

func removeMetrics(metrics podMetrics, pods sets.Set[string]) {
	for name := range pods {
		delete(metrics, name)
	}
}

// podRequests are the pods' requests of resource (milli-units), of one container if named;
// sidecars (init containers that keep running) count as the pod's containers do. A pod with
// pod-level requests (spec.resources) is measured against them unless a container is
// named, as kube's calculatePodRequests (PodLevelResources, on by default).
func podRequests(pods []*corev1.Pod, container string, resource corev1.ResourceName) (map[string]int64, error) {
	requests := make(map[string]int64, len(pods))
	for _, pod := range pods {
		if container == "" && resourcehelpers.IsPodLevelRequestsSet(pod) {
			req, ok := resourcehelpers.PodRequests(pod, resourcehelpers.PodResourcesOptions{})[resource]
			if !ok {
				return nil, fmt.Errorf("missing pod-level request for %s in Pod %s", resource, pod.Name)
			}
			requests[pod.Name] = req.MilliValue()
			continue
		}
		containers := slices.Clone(pod.Spec.Containers)
		for _, c := range pod.Spec.InitContainers {
			if ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways {
				containers = append(containers, c)
			}
		}
		var sum int64
		found := false
		for _, c := range containers {
			if container != "" && c.Name != container {
				continue
			}
			req, ok := c.Resources.Requests[resource]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, pod.Name)
			}
			sum, found = sum+req.MilliValue(), true
		}
		if container != "" && !found {
			return nil, fmt.Errorf("container %s not found in Pod %s", container, pod.Name)
		}
		requests[pod.Name] = sum
	}
	return requests, nil
}

// utilizationRatio is the usage over the requests of the sampled pods: as a ratio to the
// target, as a percentage, and the raw average.
func utilizationRatio(metrics podMetrics, requests map[string]int64, target int32) (ratio float64, utilization int32, rawAverage int64, err error) {
	var usage, requested int64
	for name, m := range metrics {
		req, ok := requests[name]
		if !ok {
			continue // a pod the lister does not know yet
		}
		usage += m.value
		requested += req
	}
	if requested == 0 {
		return 0, 0, 0, errors.New("no metrics returned matched known pods")
	}
	utilization = int32(usage * 100 / requested)
	return float64(utilization) / float64(target), utilization, usage / int64(len(metrics)), nil
}

// averageRatio is the pods' average usage over the target, and the average.
func averageRatio(metrics podMetrics, target int64) (float64, int64) {
	var usage int64
	for _, m := range metrics {
		usage += m.value
	}
	average := usage / int64(len(metrics))
	return float64(usage) / (float64(target) * float64(len(metrics))), average
}
