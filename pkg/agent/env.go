package agent

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// containerEnv turns a container's env into NAME=value pairs. Values from
// the downward API (fieldRef) are resolved; other sources (ConfigMaps,
// Secrets, resources) are not served yet and are an error, reported as
// CreateContainerConfigError like the kubelet does for a missing source.
func containerEnv(pod *corev1.Pod, c *corev1.Container, podIP, hostIP string) ([]string, error) {
	env := make([]string, 0, len(c.Env))
	for _, e := range c.Env {
		value := e.Value
		if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil {
				return nil, fmt.Errorf("env %s of container %s: only value and valueFrom.fieldRef are supported", e.Name, c.Name)
			}
			v, err := podFieldValue(pod, e.ValueFrom.FieldRef.FieldPath, podIP, hostIP)
			if err != nil {
				return nil, fmt.Errorf("env %s of container %s: %w", e.Name, c.Name, err)
			}
			value = v
		}
		env = append(env, e.Name+"="+value)
	}
	return env, nil
}

// podFieldValue resolves a downward-API field path (the ones the kubelet supports for env).
func podFieldValue(pod *corev1.Pod, path, podIP, hostIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	}
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// subscript extracts KEY from "prefix['KEY']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}
