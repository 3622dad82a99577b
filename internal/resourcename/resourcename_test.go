package resourcename

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name                    corev1.ResourceName
		native, extended, overc bool
	}{
		{"cpu", true, false, true},
		{"memory", true, false, true},
		{"hugepages-2Mi", true, false, false},
		{"kubernetes.io/something", true, false, true},
		{"example.com/gpu", false, true, false},
		{"requests.example.com/gpu", false, false, false},
		{"example.com/bad name", false, false, false},
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
	}
}
