package resourcename

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name                             corev1.ResourceName
		native, extended, overc, integer bool
	}{
		{"cpu", true, false, true, false},
		{"memory", true, false, true, false},
		{"hugepages-2Mi", true, false, false, false},
		{"kubernetes.io/something", true, false, true, false},
		{"pods", true, false, true, true},
		{"services.loadbalancers", true, false, true, true},
		{"example.com/gpu", false, true, false, true},
		{"requests.example.com/gpu", false, false, false, false},
		{"example.com/bad name", false, false, false, false},
	} {
		if got := IsNative(tc.name); got != tc.native {
			t.Errorf("IsNative(%s) = %v", tc.name, got)
		}
		if got := IsExtended(tc.name); got != tc.extended {
			t.Errorf("IsExtended(%s) = %v", tc.name, got)
		}
		if got := OvercommitAllowed(tc.name); got != tc.overc {
			t.Errorf("OvercommitAllowed(%s) = %v", tc.name, got)
		}
		if got := IsInteger(tc.name); got != tc.integer {
			t.Errorf("IsInteger(%s) = %v", tc.name, got)
		}
	}
}

func TestStandardNames(t *testing.T) {
	for _, tc := range []struct {
		name                       corev1.ResourceName
		standard, quota, container bool
	}{
		{"cpu", true, true, true},
		{"ephemeral-storage", true, true, true},
		{"requests.memory", true, true, false},
		{"pods", true, true, false},
		{"storage", true, false, false},
		{"requests.storage", true, true, false},
		{"hugepages-2Mi", true, true, true},
		{"requests.hugepages-1Gi", true, true, false},
		{"gpu", false, false, false},
		{"example.com/gpu", false, false, false},
	} {
		if got := IsStandardContainer(tc.name); got != tc.container {
			t.Errorf("IsStandardContainer(%s) = %v", tc.name, got)
		}
		if got := IsStandard(tc.name); got != tc.standard {
			t.Errorf("IsStandard(%s) = %v", tc.name, got)
		}
		if got := IsStandardQuota(tc.name); got != tc.quota {
			t.Errorf("IsStandardQuota(%s) = %v", tc.name, got)
		}
	}
}
