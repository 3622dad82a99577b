// Package fieldpath resolves the downward API: a pod's fields (fieldRef) and its
// containers' resources (resourceFieldRef), as env values and as downwardAPI volume
// files, the way the kubelet formats them.
package fieldpath

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minik8s/minik8s/pkg/agent/cm"
)

// Addresses are the pod's and its node's IPs, which only the node knows when a
// container starts.
type Addresses struct {
	PodIP, HostIP string
}

// Value resolves a fieldRef path (metadata.labels['k'], spec.nodeName ...).
func Value(pod *corev1.Pod, path string, addrs Addresses) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return addrs.PodIP, nil
	case "status.hostIP", "status.hostIPs":
		return addrs.HostIP, nil
	}
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// FormatMap writes labels or annotations as the kubelet does in a downwardAPI file:
// key="value" lines (Go-quoted values), sorted by key.
func FormatMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// subscript extracts KEY from "prefix['KEY']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// ResourceValue resolves an environment variable's resourceFieldRef for the named
// container (the one asking, when ref names none): its limit or request divided by the
// divisor, rounded up; a limit the container does not set is its pod's pod-level one,
// else the node's allocatable, as the kubelet's defaultPodLimitsForDownwardAPI.
func ResourceValue(pod *corev1.Pod, container string, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	return resourceValue(pod, container, ref, allocatable, true)
}

// VolumeResourceValue resolves a downwardAPI volume file's resourceFieldRef: as
// ResourceValue, but a limit the container does not set is the node's allocatable even
// when the pod sets a pod-level one, as the kubelet's downwardAPI volume (CollectData).
func VolumeResourceValue(pod *corev1.Pod, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	return resourceValue(pod, "", ref, allocatable, false)
}

func resourceValue(pod *corev1.Pod, container string, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList, podLevel bool) (string, error) {
	if ref.ContainerName != "" {
		container = ref.ContainerName
	}
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			c = &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == container {
			c = &pod.Spec.InitContainers[i]
		}
	}
	if c == nil {
		return "", fmt.Errorf("container %s not found", container) // kube's words
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	list := c.Resources.Requests
	switch {
	case kind == "limits" && podLevel:
		list = cm.ContainerLimits(pod.Spec.Resources, c)
	case kind == "limits":
		list = c.Resources.Limits
	}
	q, set := list[corev1.ResourceName(name)]
	if !set && kind == "limits" {
		q, set = allocatable[corev1.ResourceName(name)]
	}
	if !set {
		q = resource.Quantity{}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}
