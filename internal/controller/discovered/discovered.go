// Package discovered picks, from API discovery, the resources a controller can work on.
package discovered

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Supporting returns the resources (not subresources) of lists that serve every verb.
func Supporting(lists []*metav1.APIResourceList, verbs ...string) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			if !slices.ContainsFunc(verbs, func(v string) bool { return !slices.Contains(r.Verbs, v) }) {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out
}
