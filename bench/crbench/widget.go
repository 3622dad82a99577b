package main

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// The custom resource the benchmark creates: a namespaced Widget whose spec has 20
// fields of every kind a structural schema has (integers, strings, enums, a number, a
// boolean, a map, a set, a list-map of objects, a nested object), and one CEL rule
// every create evaluates.
const (
	group    = "bench.minik8s.io"
	version  = "v1"
	plural   = "widgets"
	kind     = "Widget"
	celRule  = "self.replicas <= self.maxReplicas"
	celError = "replicas must not exceed maxReplicas"
)

var widgets = schema.GroupVersionResource{Group: group, Version: version, Resource: plural}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	str := func(maxLength int64) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To(maxLength)}
	}
	integer := func(minimum, maximum float64) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32", Minimum: ptr.To(minimum), Maximum: ptr.To(maximum)}
	}
	enum := func(values ...string) apiextensionsv1.JSONSchemaProps {
		p := str(16)
		for _, v := range values {
			p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", v))})
		}
		return p
	}
	stringList := apiextensionsv1.JSONSchemaProps{Type: "array", MaxItems: ptr.To[int64](16),
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr.To(str(64))}}
	tags := stringList
	tags.XListType = ptr.To("set")
	spec := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"replicas", "maxReplicas", "image"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas":       integer(0, 1000),
			"maxReplicas":    integer(1, 1000),
			"image":          str(256),
			"command":        stringList,
			"port":           integer(1, 65535),
			"protocol":       enum("TCP", "UDP", "SCTP"),
			"enabled":        {Type: "boolean"},
			"ratio":          {Type: "number"},
			"labels":         {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: ptr.To(str(63))}},
			"owner":          str(63),
			"tier":           enum("frontend", "backend", "batch"),
			"timeoutSeconds": integer(1, 3600),
			"retries":        integer(0, 10),
			"schedule":       str(64),
			"region":         str(32),
			"zone":           str(32),
			"priority":       integer(-100, 100),
			"tags":           tags,
			"env": {Type: "array", MaxItems: ptr.To[int64](32), XListType: ptr.To("map"), XListMapKeys: []string{"name"},
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Required: []string{"name"},
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str(64), "value": str(256)}}}},
			"resources": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"cpu": str(16), "memory": str(16)}},
		},
		XValidations: apiextensionsv1.ValidationRules{{Rule: celRule, Message: celError}},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: "widget", Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}}}},
		},
	}
}

// widget is the i-th object a client creates, every field of the spec set; replicas
// stays within maxReplicas, so the CEL rule passes.
func widget(ns, name string, i int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/" + version,
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "crbench"}},
		"spec": map[string]any{
			"replicas":       i % 10,
			"maxReplicas":    int64(10),
			"image":          "localhost/minik8s/netexec:v1",
			"command":        []any{"/netexec", "--http-port=8080"},
			"port":           int64(8080),
			"protocol":       "TCP",
			"enabled":        true,
			"ratio":          0.75,
			"labels":         map[string]any{"team": "bench", "shard": fmt.Sprint(i % 16)},
			"owner":          "crbench",
			"tier":           "backend",
			"timeoutSeconds": int64(30),
			"retries":        int64(3),
			"schedule":       "*/5 * * * *",
			"region":         "eu-west",
			"zone":           fmt.Sprintf("eu-west-%d", i%3),
			"priority":       int64(i%200 - 100),
			"tags":           []any{"a", "b", "c"},
			"env":            []any{map[string]any{"name": "MODE", "value": "bench"}, map[string]any{"name": "INDEX", "value": fmt.Sprint(i)}},
			"resources":      map[string]any{"cpu": "100m", "memory": "64Mi"},
		},
	}}
}

// invalidWidget breaks only the CEL rule: both servers must refuse it the same way.
func invalidWidget(ns string) *unstructured.Unstructured {
	w := widget(ns, "invalid", 0)
	spec := w.Object["spec"].(map[string]any)
	spec["replicas"], spec["maxReplicas"] = int64(20), int64(10)
	return w
}
