package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// knobsCRD has two versions with the None conversion strategy whose schemas differ (v1,
// the storage version, declares spec.b, v2 spec.c) and an embedded resource.
const knobsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: knobs.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {plural: knobs, singular: knob, kind: Knob, listKind: KnobList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              a: {type: string}
              b: {type: string}
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              a: {type: string}
              c: {type: string}
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`

// A custom resource as kube-apiserver 1.36 takes it, with the real kubectl: the unknown
// fields of its metadata and of an embedded resource's metadata are refused by kubectl's
// default (strict) field validation and warned of with --validate=warn; with the None
// conversion, what the version converted to does not declare is pruned (not served at v2,
// not stored at v1); an embedded resource that does not decode is a bad request. Before,
// the metadata's unknown fields were dropped silently, every field was kept across
// versions, and the embedded resource was refused by validation (422).
func TestCustomResourceParity(t *testing.T) {
	l := upLab(t, "e2e-crdparity", 1)
	applyYAML(t, l, knobsCRD)
	waitEstablished(t, l, "crd/knobs.example.com")

	k1 := writeManifest(t, `apiVersion: example.com/v1
kind: Knob
metadata: {name: k1, junk: 1}
spec:
  a: x
  b: "yy"
  template: {apiVersion: v1, kind: Pod, metadata: {name: p, junk: 2}}
`)
	_, err := cluster.Kubectl(context.Background(), l, "create", "-f", k1)
	want := `Knob in version "v1" cannot be handled as a Knob: strict decoding error: unknown field "metadata.junk", unknown field "spec.template.metadata.junk"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("create with unknown metadata fields: %v, want %q", err, want)
	}
	out := mustKubectl(t, l, "create", "--validate=warn", "-f", k1)
	for _, want := range []string{`Warning: unknown field "metadata.junk"`, `Warning: unknown field "spec.template.metadata.junk"`, "knob.example.com/k1 created"} {
		if !strings.Contains(out, want) {
			t.Errorf("create --validate=warn: no %q in\n%s", want, out)
		}
	}

	// An embedded resource that does not decode: refused as the body is decoded (400),
	// whatever the field validation.
	_, err = cluster.Kubectl(context.Background(), l, "create", "--validate=false", "-f", writeManifest(t, `apiVersion: example.com/v1
kind: Knob
metadata: {name: k3}
spec:
  template: {apiVersion: 5, kind: Pod}
`))
	want = `Error from server (BadRequest): error when creating`
	wantCause := `Knob in version "v1" cannot be handled as a Knob: spec.template.apiVersion: Invalid value: 5: must be a string`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), wantCause) {
		t.Errorf("create with an embedded apiVersion of the wrong type: %v, want %q and %q", err, want, wantCause)
	}

	get := func(resource, name string) string {
		return mustKubectl(t, l, "get", resource, name, "-o", "jsonpath={.apiVersion} a={.spec.a} b={.spec.b} c={.spec.c}")
	}
	for resource, want := range map[string]string{
		"knobs.v1.example.com": "example.com/v1 a=x b=yy c=",
		"knobs.v2.example.com": "example.com/v2 a=x b= c=",
	} {
		if got := get(resource, "k1"); got != want {
			t.Errorf("k1 created at v1, get %s: %q, want %q", resource, got, want)
		}
	}
	applyYAML(t, l, `apiVersion: example.com/v2
kind: Knob
metadata: {name: k2}
spec: {a: x, c: z}
`)
	for resource, want := range map[string]string{
		"knobs.v1.example.com": "example.com/v1 a=x b= c=",
		"knobs.v2.example.com": "example.com/v2 a=x b= c=",
	} {
		if got := get(resource, "k2"); got != want {
			t.Errorf("k2 created at v2, get %s: %q, want %q", resource, got, want)
		}
	}
}
