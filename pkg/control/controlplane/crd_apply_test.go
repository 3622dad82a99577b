package controlplane

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// A CustomResourceDefinition whose spec.ports is a list-map keyed by name, so that server-side
// apply merges the entries of several managers, with a status subresource.
const sprocketsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sprockets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: sprockets, singular: sprocket, kind: Sprocket, listKind: SprocketList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              port: {x-kubernetes-int-or-string: true}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
`

func sprocket(spec string) string {
	return "apiVersion: example.com/v1\nkind: Sprocket\nmetadata: {name: g1}\nspec:\n" + spec
}

// managers are the managers of a custom resource's managedFields, with their operation
// and subresource.
func managers(t *testing.T, c *cluster, name string) string {
	t.Helper()
	return c.mustKubectl(t, "", "get", "sprocket", name, "-o",
		`jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource}{" "}{end}`)
}

// Custom resources have managed fields and server-side apply as built-in kinds do:
// conflicts name the other manager, --force-conflicts takes the field, list-maps merge by
// key, the status subresource is applied on its own, fieldValidation holds on apply, and a
// changed schema changes what apply accepts.
func TestCustomResourceServerSideApply(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	c.applyCRD(t, sprocketsCRD, "sprockets.example.com")
	eventually(t, c, "get", "sprockets")

	// A plain create records its manager.
	c.mustKubectl(t, "apiVersion: example.com/v1\nkind: Sprocket\nmetadata: {name: g0}\nspec: {color: green}\n", "create", "-f", "-")
	if got := managers(t, c, "g0"); got != "kubectl-create/Update/ " {
		t.Errorf("managedFields after create: %q", got)
	}

	// Two managers apply; the second conflicts on the first's field, naming it.
	c.mustKubectl(t, sprocket("  color: red\n  port: http\n  ports: [{name: http, port: 80}]\n"), "apply", "--server-side", "--field-manager=alice", "-f", "-")
	out, err := c.kubectl(t, sprocket("  color: blue\n"), "apply", "--server-side", "--field-manager=bob", "-f", "-")
	if err == nil || !strings.Contains(out, `conflict with "alice"`) || !strings.Contains(out, ".spec.color") {
		t.Fatalf("a conflicting apply: %v\n%s", err, out)
	}
	c.mustKubectl(t, sprocket("  color: blue\n  ports: [{name: https, port: 443}]\n"), "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-")
	if got := c.mustKubectl(t, "", "get", "sprocket", "g1", "-o", "jsonpath={.spec.color} {.spec.port} {.spec.ports[*].name}"); got != "blue http http https" {
		t.Errorf("after the forced apply (color taken, ports merged by name): %q", got)
	}
	fields := c.mustKubectl(t, "", "get", "sprocket", "g1", "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}={.fieldsV1}{"\n"}{end}`)
	for _, want := range []string{`alice={"f:spec":{"f:port":{},"f:ports":{"k:{\"name\":\"http\"}"`, `bob={"f:spec":{"f:color":{},"f:ports":{"k:{\"name\":\"https\"}"`} {
		if !strings.Contains(fields, want) {
			t.Errorf("managed fields: want %s in\n%s", want, fields)
		}
	}
	if strings.Contains(strings.SplitN(fields[strings.Index(fields, "alice="):], "\n", 2)[0], "f:color") {
		t.Errorf("alice still owns spec.color:\n%s", fields)
	}

	// The status subresource is applied on its own and recorded as such; spec is not
	// changed through it.
	c.mustKubectl(t, sprocket("  color: yellow\nstatus: {phase: Ready}\n"), "apply", "--server-side", "--subresource=status", "--field-manager=ctl", "-f", "-")
	if got := c.mustKubectl(t, "", "get", "sprocket", "g1", "-o", "jsonpath={.status.phase} {.spec.color}"); got != "Ready blue" {
		t.Errorf("after a status apply: %q", got)
	}
	if got := managers(t, c, "g1"); !strings.Contains(got, "ctl/Apply/status ") {
		t.Errorf("managedFields after a status apply: %q", got)
	}

	// fieldValidation: an unknown field fails a Strict apply; a duplicate field fails Strict
	// and warns with Warn.
	admin := c.adminConfig(t)
	warnings := &warningRecorder{}
	admin.WarningHandler = warnings
	sprockets := customResources(admin, "example.com", "v1", "sprockets")
	apply := func(body, validation string) error {
		_, err := sprockets.Patch(ctx, "g1", types.ApplyYAMLPatchType, []byte(body), metav1.PatchOptions{FieldManager: "carol", FieldValidation: validation})
		return err
	}
	if err := apply(sprocket("  bogus: 1\n"), "Strict"); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), ".spec.bogus: field not declared in schema") {
		t.Errorf("an unknown field applied: %v", err)
	}
	duplicate := sprocket("  color: blue\n  color: blue\n")
	if err := apply(duplicate, "Strict"); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `error strict decoding YAML`) || !strings.Contains(err.Error(), `"color" already set in map`) {
		t.Errorf("a duplicate field applied with Strict: %v", err)
	}
	if err := apply(duplicate, "Warn"); err != nil || !strings.Contains(warnings.String(), `"color" already set in map`) {
		t.Errorf("a duplicate field applied with Warn: %v, warnings %q", err, warnings.String())
	}

	// A changed schema is what apply checks against from then on.
	c.mustKubectl(t, strings.Replace(sprocketsCRD, "color: {type: string}", "color: {type: string}\n              bogus: {type: integer}", 1), "apply", "-f", "-")
	deadline := time.Now().Add(20 * time.Second)
	for err := apply(sprocket("  bogus: 1\n"), "Strict"); err != nil; err = apply(sprocket("  bogus: 1\n"), "Strict") {
		if time.Now().After(deadline) {
			t.Fatalf("a field added to the schema is still refused: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := c.mustKubectl(t, "", "get", "sprocket", "g1", "-o", "jsonpath={.spec.bogus}"); got != "1" {
		t.Errorf("the new field: %q", got)
	}
}

// warningRecorder keeps the warnings the API server sent.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.warnings, "\n")
}

// Server-side apply works across the versions of a CustomResourceDefinition (conversion
// None): one field manager applies at v1, then at v2; its fields are converted, so what it
// no longer applies is removed, without a conflict with itself.
func TestCustomResourceServerSideApplyAcrossVersions(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	version := func(name string, storage bool) string {
		return fmt.Sprintf(`  - name: %s
    served: true
    storage: %v
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              size: {type: integer}
`, name, storage)
	}
	c.applyCRD(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cogs.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: cogs, singular: cog, kind: Cog, listKind: CogList}
  versions:
`+version("v1", true)+version("v2", false), "cogs.example.com")
	admin := c.adminConfig(t)
	cogs := func(v string) dynamic.ResourceInterface { return customResources(admin, "example.com", v, "cogs") }
	apply := func(v, spec string) error {
		_, err := cogs(v).Patch(ctx, "c1", types.ApplyYAMLPatchType, []byte("apiVersion: example.com/"+v+"\nkind: Cog\nmetadata: {name: c1}\nspec: "+spec+"\n"),
			metav1.PatchOptions{FieldManager: "one"})
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for err := apply("v1", "{color: red, size: 1}"); err != nil; err = apply("v1", "{color: red, size: 1}") {
		if time.Now().After(deadline) {
			t.Fatalf("apply at v1: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for err := apply("v2", "{color: blue}"); err != nil; err = apply("v2", "{color: blue}") {
		if time.Now().After(deadline) {
			t.Fatalf("apply at v2: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, v := range []string{"v1", "v2"} {
		got, err := cogs(v).Get(ctx, "c1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec, _, _ := unstructured.NestedMap(got.Object, "spec")
		if len(spec) != 1 || spec["color"] != "blue" {
			t.Errorf("read at %s after applies at v1 then v2: spec %v, want {color: blue}", v, spec)
		}
		managed := got.GetManagedFields()
		if len(managed) != 1 || managed[0].Manager != "one" || managed[0].Operation != metav1.ManagedFieldsOperationApply || managed[0].APIVersion != "example.com/v2" {
			t.Errorf("managed fields read at %s: %+v; want one Apply entry of manager one at example.com/v2", v, managed)
		}
	}
}
