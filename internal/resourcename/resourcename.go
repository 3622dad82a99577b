// Package resourcename classifies resource names as Kubernetes' core v1 helper does
// (k8s.io/kubernetes/pkg/apis/core/v1/helper), which no published module exports.
package resourcename

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// IsNative: no domain, or a kubernetes.io one (cpu, memory, hugepages-2Mi, kubernetes.io/x).
func IsNative(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// IsExtended: a qualified name outside the kubernetes.io domains (example.com/gpu),
// without the "requests." prefix of quotas.
func IsExtended(name corev1.ResourceName) bool {
	if IsNative(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// OvercommitAllowed: a native resource other than hugepages may be requested below its limit.
func OvercommitAllowed(name corev1.ResourceName) bool {
	return IsNative(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
