// Package resourcename classifies resource names as Kubernetes' core v1 helper does
// (k8s.io/kubernetes/pkg/apis/core/v1/helper), which no published module exports.
package resourcename

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
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

// IsHugePages: a hugepages-SIZE name.
func IsHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// OvercommitAllowed: a native resource other than hugepages may be requested below its limit.
func OvercommitAllowed(name corev1.ResourceName) bool {
	return IsNative(name) && !IsHugePages(name)
}

// counted are the native resources measured in whole units.
var counted = sets.New(corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices,
	corev1.ResourceReplicationControllers, corev1.ResourceSecrets, corev1.ResourceConfigMaps,
	corev1.ResourcePersistentVolumeClaims, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers)

// IsInteger: a resource counted in whole units (pods, services, ...) or an extended one
// (kube's IsIntegerResourceName).
func IsInteger(name corev1.ResourceName) bool {
	return counted.Has(name) || IsExtended(name)
}

// standard are the native names a resource list may hold without a domain (kube's
// standardResources): compute, storage and the object counts of quotas.
var standard = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceStorage, corev1.ResourceRequestsStorage, corev1.ResourceServicesNodePorts,
	corev1.ResourceServicesLoadBalancers)

// IsStandard: a known name without a domain, or hugepages (kube's IsStandardResourceName).
func IsStandard(name corev1.ResourceName) bool {
	return standard.Has(name) || isQuotaHugePages(name)
}

// IsStandardQuota: a name without a domain that a ResourceQuota may limit (kube's
// IsStandardQuotaResourceName): storage alone is not one, requests.storage is.
func IsStandardQuota(name corev1.ResourceName) bool {
	return name != corev1.ResourceStorage && IsStandard(name)
}

func isQuotaHugePages(name corev1.ResourceName) bool {
	return IsHugePages(name) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// IsStandardContainer: a name without a domain a container can request (kube's
// IsStandardContainerResourceName): cpu, memory, ephemeral-storage, hugepages.
func IsStandardContainer(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return IsHugePages(name)
}
