package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// A built-in kind deprecated by kube v1.36 carries kube-apiserver's warning; others none.
func TestBuiltinDeprecation(t *testing.T) {
	for _, tc := range []struct {
		res  *Resource
		want string
	}{
		{NewResource(corev1.SchemeGroupVersion, "endpoints", "Endpoints", true, Rules{}, nil, nil), "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"},
		{NewResource(corev1.SchemeGroupVersion, "componentstatuses", "ComponentStatus", false, Rules{}, nil, nil), "v1 ComponentStatus is deprecated in v1.19+"},
		{NewResource(corev1.SchemeGroupVersion, "pods", "Pod", true, Rules{}, nil, nil), ""},
		{NewResource(discoveryv1.SchemeGroupVersion, "endpointslices", "EndpointSlice", true, Rules{}, nil, nil), ""},
	} {
		if tc.res.Deprecation != tc.want {
			t.Errorf("%s: deprecation %q, want %q", tc.res.Resource, tc.res.Deprecation, tc.want)
		}
	}
}
