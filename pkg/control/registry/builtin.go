package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Builtin returns the registry of every resource miniapi serves.
func Builtin() (*Registry, error) {
	core := func(plural, kind string, namespaced bool, rules Rules, shortNames []string, sub ...string) *Resource {
		return res(schema.GroupVersion{Version: "v1"}, plural, kind, namespaced, rules, shortNames, sub...)
	}
	return New(
		core("namespaces", "Namespace", false, namespaceRules, []string{"ns"}, "status", "finalize"),
		core("nodes", "Node", false, nodeRules, []string{"no"}, "status"),
		core("pods", "Pod", true, podRules, []string{"po"}, "status", "binding"),
		core("events", "Event", true, eventRules, []string{"ev"}),
		core("configmaps", "ConfigMap", true, Rules{}, []string{"cm"}),
		core("secrets", "Secret", true, Rules{}, nil),
		core("serviceaccounts", "ServiceAccount", true, Rules{}, []string{"sa"}),
		res(schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}, "leases", "Lease", true, Rules{}, nil),
	)
}

func res(gv schema.GroupVersion, plural, kind string, namespaced bool, rules Rules, shortNames []string, sub ...string) *Resource {
	singular := strings.ToLower(kind)
	return &Resource{
		GroupVersionResource: gv.WithResource(plural),
		Kind:                 kind,
		Singular:             singular,
		Namespaced:           namespaced,
		ShortNames:           shortNames,
		Subresources:         sub,
		Rules:                rules,
	}
}

var eventRules = Rules{
	Fields: func(obj runtime.Object) fields.Set {
		e := obj.(*corev1.Event)
		return fields.Set{
			"involvedObject.kind":            e.InvolvedObject.Kind,
			"involvedObject.namespace":       e.InvolvedObject.Namespace,
			"involvedObject.name":            e.InvolvedObject.Name,
			"involvedObject.uid":             string(e.InvolvedObject.UID),
			"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
			"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
			"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
			"reason":                         e.Reason,
			"reportingComponent":             e.ReportingController,
			"source":                         e.Source.Component,
			"type":                           e.Type,
		}
	},
}
