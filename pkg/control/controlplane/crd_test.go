package controlplane

import (
	"strings"
	"testing"
)

// A structural CustomResourceDefinition of the kind operators install (namespaced, status
// and scale subresources, printer columns, a default, a CEL rule, int-or-string).
const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.replicas <= self.maxReplicas"
              message: "replicas must not exceed maxReplicas"
            properties:
              color: {type: string, enum: [red, green, blue]}
              size: {type: string, default: medium}
              replicas: {type: integer, minimum: 0}
              maxReplicas: {type: integer, default: 10}
              port: {x-kubernetes-int-or-string: true}
          status:
            type: object
            properties:
              replicas: {type: integer}
`

// A CustomResourceDefinition is stored, validated by apiextensions-apiserver's own rules,
// and established by the naming and establishing controllers, as kube-apiserver does.
func TestCustomResourceDefinitionEstablished(t *testing.T) {
	c := startCluster(t)
	if out := c.mustKubectl(t, widgetsCRD, "apply", "-f", "-"); !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created") {
		t.Fatalf("apply:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=20s", "crd/widgets.example.com"); !strings.Contains(out, "condition met") {
		t.Fatalf("wait Established:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "get", "crd", "widgets.example.com", "-o", "jsonpath={.status.acceptedNames.kind} {.status.storedVersions} {.metadata.generation}"); out != `Widget ["v1"] 1` {
		t.Errorf("status of the established CRD: %q", out)
	}
	if out := c.mustKubectl(t, "", "get", "crd", "widgets.example.com", "-o", "jsonpath={.status.conditions[?(@.type==\"NamesAccepted\")].status}"); out != "True" {
		t.Errorf("NamesAccepted = %q", out)
	}

	// Upstream's validation, with upstream's words (a schema all versions share is
	// validated as spec.validation, as kube-apiserver reports it).
	bad := strings.Replace(strings.Replace(widgetsCRD, "name: widgets.example.com", "name: gadgets.example.com", 1), "plural: widgets", "plural: gizmos", 1)
	out, err := c.kubectl(t, bad, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, `metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`) {
		t.Errorf("a CRD whose name is not plural.group: err %v\n%s", err, out)
	}
	bad = strings.Replace(widgetsCRD, "replicas: {type: integer, minimum: 0}", "replicas: {minimum: 0}", 1)
	out, err = c.kubectl(t, strings.Replace(bad, "widgets", "things", -1), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.validation.openAPIV3Schema.properties[spec].properties[replicas].type: Required value: must not be empty for specified object fields") {
		t.Errorf("a non-structural schema: err %v\n%s", err, out)
	}

	// A second CRD claiming the same kind in the group is not accepted.
	dup := strings.NewReplacer("name: widgets.example.com", "name: others.example.com", "plural: widgets", "plural: others", "singular: widget", "singular: other", "shortNames: [wd]", "shortNames: [ot]", "listKind: WidgetList", "listKind: OtherList").Replace(widgetsCRD)
	c.mustKubectl(t, dup, "apply", "-f", "-")
	c.waitFor(t, "False", "get", "crd", "others.example.com", "-o", "jsonpath={.status.conditions[?(@.type==\"NamesAccepted\")].status}")
	if out := c.mustKubectl(t, "", "get", "crd", "others.example.com", "-o", "jsonpath={.status.conditions[?(@.type==\"NamesAccepted\")].message}"); out != `"Widget" is already in use` {
		t.Errorf("NamesAccepted message = %q", out)
	}

	if out := c.mustKubectl(t, "", "get", "crds"); !strings.Contains(out, "widgets.example.com") || !strings.Contains(out, "CREATED AT") {
		t.Errorf("kubectl get crds:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "explain", "customresourcedefinitions.spec.versions.schema"); !strings.Contains(out, "openAPIV3Schema") {
		t.Errorf("kubectl explain of the CRD kind:\n%s", out)
	}
}
