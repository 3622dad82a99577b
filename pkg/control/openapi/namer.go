package openapi

import (
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// extensionGVK names the group-version-kinds a definition or an operation is about; kubectl
// (explain, validation) and structured-merge-diff find kinds by it.
const extensionGVK = "x-kubernetes-group-version-kind"

// definitionNamer keeps the generated definition names (already Kubernetes' own, e.g.
// io.k8s.api.core.v1.Pod) and marks every definition that is a kind of the scheme with the
// group-version-kinds it is served as.
type definitionNamer map[string][]schema.GroupVersionKind

// newDefinitionNamer indexes the kinds of s whose group version passes served.
func newDefinitionNamer(s *runtime.Scheme, served func(schema.GroupVersion) bool) definitionNamer {
	n := definitionNamer{}
	for gvk := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || !served(gvk.GroupVersion()) {
			continue
		}
		name, err := s.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			continue // not a type of ours to describe
		}
		n[name] = append(n[name], gvk)
	}
	for _, gvks := range n {
		sort.Slice(gvks, func(i, j int) bool {
			a, b := gvks[i], gvks[j]
			if a.Group != b.Group {
				return a.Group < b.Group
			}
			if a.Version != b.Version {
				return a.Version < b.Version
			}
			return a.Kind < b.Kind
		})
	}
	return n
}

// name is the GetDefinitionName of kube-openapi's builders.
func (n definitionNamer) name(model string) (string, spec.Extensions) {
	gvks, ok := n[model]
	if !ok {
		return model, nil
	}
	// A list of generic maps: the shape structured-merge-diff's parser reads back.
	list := make([]any, len(gvks))
	for i, gvk := range gvks {
		list[i] = gvkExtension(gvk)
	}
	return model, spec.Extensions{extensionGVK: list}
}

func gvkExtension(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}
