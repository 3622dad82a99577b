package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A CustomResourceDefinition whose schema documents its fields, for kubectl explain.
const gizmosCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.openapi.example.com
spec:
  group: openapi.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A Gizmo is a test of published schemas.
        properties:
          spec:
            type: object
            description: What the gizmo should be.
            properties:
              color:
                type: string
                description: The paint of the gizmo, one of red and blue.
              SIZEFIELD
`

const gizmoV2Definition = "com.example.openapi.v1.Gizmo"

// Every served version of an Established CustomResourceDefinition is published in
// /openapi/v2 and /openapi/v3 within a moment, changes with its schema and goes with it, as
// kube-apiserver's apiextensions controllers do; kubectl explains it and validates against it.
func TestCustomResourceOpenAPI(t *testing.T) {
	c := startCluster(t)
	hc := c.httpClient(t)
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, body := c.getAccept(t, hc, path, "application/json")
		return resp.StatusCode, body
	}
	// published reports the v2 definition of Gizmo v1 and the v3 root's URLs of the
	// openapi.example.com group versions.
	published := func() (definition []byte, v3 map[string]string) {
		_, body := get("/openapi/v2")
		var doc struct {
			Definitions map[string]json.RawMessage `json:"definitions"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("/openapi/v2: %v", err)
		}
		_, body = get("/openapi/v3")
		var root struct {
			Paths map[string]struct {
				URL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(body, &root); err != nil {
			t.Fatalf("/openapi/v3: %v", err)
		}
		v3 = map[string]string{}
		for gv, p := range root.Paths {
			if strings.HasPrefix(gv, "apis/openapi.example.com/") {
				v3[gv] = p.URL
			}
		}
		return doc.Definitions[gizmoV2Definition], v3
	}
	// await polls until ok holds of what is published: it takes about a second, as with
	// upstream's controllers; the limit leaves room for a loaded machine.
	await := func(what string, ok func(definition []byte, v3 map[string]string) bool) {
		t.Helper()
		start := time.Now()
		for {
			definition, v3 := published()
			if ok(definition, v3) {
				t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
				return
			}
			if time.Since(start) > 15*time.Second {
				t.Fatalf("%s: not within 15s; v2 definition: %s\nv3 group versions: %v", what, definition, v3)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	c.mustKubectl(t, strings.Replace(gizmosCRD, "SIZEFIELD", "", 1), "apply", "-f", "-")
	await("published", func(definition []byte, v3 map[string]string) bool {
		return bytes.Contains(definition, []byte("The paint of the gizmo")) && v3["apis/openapi.example.com/v1"] != ""
	})
	_, v3 := published()
	url := v3["apis/openapi.example.com/v1"]
	if code, body := get(url); code != http.StatusOK || !bytes.Contains(body, []byte(`"`+gizmoV2Definition+`"`)) || !bytes.Contains(body, []byte("The paint of the gizmo")) {
		t.Errorf("GET %s: %d\n%s", url, code, body)
	}

	for version, bin := range kubectlVersions(t) {
		out, err := c.kubectlAt(t, bin, "", "explain", "gizmos")
		if err != nil || !strings.Contains(out, "KIND:       Gizmo") || !strings.Contains(out, "A Gizmo is a test of published schemas.") || !strings.Contains(out, "What the gizmo should be.") {
			t.Errorf("kubectl %s explain gizmos: %v\n%s", version, err, out)
		}
		out, err = c.kubectlAt(t, bin, "", "explain", "gizmos.spec.color")
		if err != nil || !strings.Contains(out, "FIELD: color") || !strings.Contains(out, "The paint of the gizmo, one of red and blue.") {
			t.Errorf("kubectl %s explain gizmos.spec.color: %v\n%s", version, err, out)
		}
		name := strings.ReplaceAll(version, ".", "-")
		out, err = c.kubectlAt(t, bin, "apiVersion: openapi.example.com/v1\nkind: Gizmo\nmetadata: {name: g-"+name+", namespace: default}\nspec: {color: red, shade: dark}\n",
			"create", "--validate=strict", "-f", "-")
		if err == nil || !strings.Contains(out, `Gizmo in version "v1" cannot be handled as a Gizmo: strict decoding error: unknown field "spec.shade"`) {
			t.Errorf("kubectl %s create of an unknown field should fail naming it: %v\n%s", version, err, out)
		}
	}

	// Another kind in a gizmo's body is one of the object's errors, and the object is named by
	// the kind its body gave, as kube-apiserver names an unstructured object.
	out, err := c.kubectl(t, `{"apiVersion":"openapi.example.com/v1","kind":"Gadget","metadata":{"name":"g"}}`,
		"create", "--raw", "/apis/openapi.example.com/v1/namespaces/default/gizmos", "-f", "-")
	if want := `The Gadget "g" is invalid: kind: Invalid value: "Gadget": must be Gizmo`; err == nil || !strings.Contains(out, want) {
		t.Errorf("a Gadget posted as a gizmo: %v\n%s\nwant %s", err, out, want)
	}

	// A changed schema is published with a new hash.
	c.mustKubectl(t, strings.Replace(gizmosCRD, "SIZEFIELD", "size: {type: integer, description: How big the gizmo is.}", 1), "apply", "-f", "-")
	await("changed schema published", func(definition []byte, v3 map[string]string) bool {
		return bytes.Contains(definition, []byte("How big the gizmo is.")) && v3["apis/openapi.example.com/v1"] != url
	})
	_, v3 = published()
	if code, body := get(v3["apis/openapi.example.com/v1"]); code != http.StatusOK || !bytes.Contains(body, []byte("How big the gizmo is.")) {
		t.Errorf("GET %s: %d\n%s", v3["apis/openapi.example.com/v1"], code, body)
	}
	out = c.mustKubectl(t, "", "explain", "gizmos.spec.size")
	if !strings.Contains(out, "How big the gizmo is.") {
		t.Errorf("kubectl explain of the changed schema:\n%s", out)
	}

	// A second served version is published; no longer served, it goes.
	twoVersions := strings.Replace(gizmosCRD, "SIZEFIELD", "", 1) + `  - name: v2
    served: SERVED
    storage: false
    schema:
      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {tint: {type: string, description: The tint.}}}}}
`
	c.mustKubectl(t, strings.Replace(twoVersions, "SERVED", "true", 1), "apply", "-f", "-")
	await("second version published", func(_ []byte, v3 map[string]string) bool { return v3["apis/openapi.example.com/v2"] != "" })
	if code, body := get("/openapi/v2"); code != http.StatusOK || !bytes.Contains(body, []byte(`"com.example.openapi.v2.Gizmo"`)) {
		t.Errorf("/openapi/v2 lacks the second version: %d", code)
	}
	c.mustKubectl(t, strings.Replace(twoVersions, "SERVED", "false", 1), "apply", "-f", "-")
	await("unserved version gone", func(definition []byte, v3 map[string]string) bool {
		return definition != nil && v3["apis/openapi.example.com/v1"] != "" && v3["apis/openapi.example.com/v2"] == ""
	})
	if code, body := get("/openapi/v2"); code != http.StatusOK || bytes.Contains(body, []byte(`"com.example.openapi.v2.Gizmo"`)) {
		t.Errorf("/openapi/v2 still describes the unserved version: %d", code)
	}
	if code, _ := get("/openapi/v3/apis/openapi.example.com/v2"); code != http.StatusNotFound {
		t.Errorf("the unserved version's v3 document: %d, want 404", code)
	}

	c.mustKubectl(t, "", "delete", "crd", "gizmos.openapi.example.com")
	await("deleted", func(definition []byte, v3 map[string]string) bool { return definition == nil && len(v3) == 0 })
	if code, _ := get(url); code != http.StatusNotFound {
		t.Errorf("GET %s after the deletion: %d, want 404", url, code)
	}
}

// The OpenAPI documents of a CustomResourceDefinition are rebuilt when its spec changes,
// not when only its status or metadata do (as upstream's controllers key them on its uid
// and generation): apiextensions_openapi_v{2,3}_regeneration_count count the rebuilds.
func TestCustomResourceOpenAPIRebuiltOnSpecChange(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	admin := c.adminConfig(t)
	crds := crdclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions()
	const name = "gizmos.openapi.example.com"
	counts := func() string {
		var out []string
		for _, line := range strings.Split(c.metrics(t), "\n") {
			if strings.HasPrefix(line, "apiextensions_openapi_v") && strings.Contains(line, `crd="`+name+`"`) {
				out = append(out, line)
			}
		}
		return strings.Join(out, "\n")
	}
	// published waits until the other CustomResourceDefinition is published: the one
	// worker syncs in the order of the events, so every event of gizmos before its
	// creation has been synced by then.
	published := func(other string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(c.metrics(t), `apiextensions_openapi_v2_regeneration_count{crd="`+other+`",reason="add"} 1`) {
			if time.Now().After(deadline) {
				t.Fatalf("%s not published within 15s", other)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	other := func(i int) string {
		return strings.NewReplacer("gizmos", fmt.Sprintf("others%d", i), "gizmo", fmt.Sprintf("other%d", i), "Gizmo", fmt.Sprintf("Other%d", i), "SIZEFIELD", "").Replace(gizmosCRD)
	}

	c.applyCRD(t, strings.Replace(gizmosCRD, "SIZEFIELD", "", 1), name)
	c.mustKubectl(t, other(1), "apply", "-f", "-")
	published("others1.openapi.example.com")
	added := `apiextensions_openapi_v2_regeneration_count{crd="` + name + `",reason="add"} 1` + "\n" +
		`apiextensions_openapi_v3_regeneration_count{crd="` + name + `",group="openapi.example.com",reason="add",version="v1"} 1`
	if got := counts(); got != added {
		t.Fatalf("after the creation:\n%s\nwant\n%s", got, added)
	}

	// Its status and labels change: nothing is rebuilt.
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: "Example",
		Status: apiextensionsv1.ConditionTrue, Reason: "Testing", Message: "a status-only update", LastTransitionTime: metav1.Now()})
	if _, err := crds.UpdateStatus(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.mustKubectl(t, "", "label", "crd", name, "touched=yes")
	c.mustKubectl(t, other(2), "apply", "-f", "-")
	published("others2.openapi.example.com")
	if got := counts(); got != added {
		t.Errorf("after updates of its status and labels:\n%s\nwant\n%s", got, added)
	}

	// Its spec changes: rebuilt.
	c.mustKubectl(t, strings.Replace(gizmosCRD, "SIZEFIELD", "size: {type: integer, description: How big the gizmo is.}", 1), "apply", "-f", "-")
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(counts(), `apiextensions_openapi_v2_regeneration_count{crd="`+name+`",reason="update"} 1`) {
		if time.Now().After(deadline) {
			t.Fatalf("not rebuilt after a change of its spec:\n%s", counts())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
