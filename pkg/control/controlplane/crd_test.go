package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
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
            - rule: "!has(self.replicas) || self.replicas <= self.maxReplicas"
              message: "replicas must not exceed maxReplicas"
            properties:
              color: {type: string, enum: [red, green, blue]}
              size: {type: string, default: medium}
              replicas: {type: integer, minimum: 0}
              maxReplicas: {type: integer, default: 10}
              port: {x-kubernetes-int-or-string: true}
              zone:
                type: string
                x-kubernetes-validations: [{rule: "self == oldSelf", message: "zone is immutable"}]
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
	if out := c.waitEstablished(t, "crd/widgets.example.com"); !strings.Contains(out, "condition met") {
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

// The custom resources of a CustomResourceDefinition are served like a built-in kind:
// kubectl and client-go's dynamic client create, read, list, watch, patch, scale and delete
// them; the schema validates (kube's messages), prunes and defaults; CEL rules hold; the
// printer columns show.
func TestCustomResources(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	c.applyCRD(t, widgetsCRD, "widgets.example.com")
	admin := c.adminConfig(t)
	widgets := customResources(admin, "example.com", "v1", "widgets")

	// Discovery serves the new kind (kubectl resolves "widget" and the short name).
	eventually(t, c, "get", "wd")
	out := c.mustKubectl(t, `apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {color: red, replicas: 2, unknown: dropped, port: "http"}
status: {replicas: 7}
`, "create", "-f", "-", "--validate=false")
	if !strings.Contains(out, "widget.example.com/w1 created") {
		t.Fatalf("create:\n%s", out)
	}
	w1, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := w1.Object["spec"].(map[string]any)
	if _, kept := spec["unknown"]; kept {
		t.Errorf("an unknown field was not pruned: %v", spec)
	}
	if spec["size"] != "medium" || spec["maxReplicas"] != int64(10) || spec["port"] != "http" {
		t.Errorf("defaults or int-or-string: %v", spec)
	}
	if _, has := w1.Object["status"]; has {
		t.Errorf("status set through create with a status subresource: %v", w1.Object["status"])
	}
	if w1.GetGeneration() != 1 || w1.GetUID() == "" {
		t.Errorf("generation %d uid %q", w1.GetGeneration(), w1.GetUID())
	}

	// Schema validation and CEL with kube's messages.
	out, err = c.kubectl(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"color":"pink","replicas":-1}}`, "create", "-f", "-", "--validate=false")
	for _, want := range []string{`The Widget "w2" is invalid`, `spec.color: Unsupported value: "pink": supported values: "red", "green", "blue"`, "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("invalid widget: want %q in\n%s", want, out)
		}
	}
	out, err = c.kubectl(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w3"},"spec":{"replicas":11}}`, "create", "-f", "-", "--validate=false")
	if err == nil || !strings.Contains(out, "spec: Invalid value: replicas must not exceed maxReplicas") {
		t.Errorf("CEL rule: %v\n%s", err, out)
	}

	// Printer columns.
	if out := c.mustKubectl(t, "", "get", "widgets"); !regexpLine(out, `^NAME\s+COLOR\s+REPLICAS`) || !regexpLine(out, `^w1\s+red\s+2`) {
		t.Errorf("kubectl get widgets:\n%s", out)
	}

	// Scale subresource, status subresource, generation.
	c.mustKubectl(t, "", "scale", "widget/w1", "--replicas=4")
	if out := c.mustKubectl(t, "", "get", "widget", "w1", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"); out != "4 2" {
		t.Errorf("after kubectl scale: %q", out)
	}
	w1, _ = widgets.Get(ctx, "w1", metav1.GetOptions{})
	if err := unstructured.SetNestedField(w1.Object, int64(3), "status", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := widgets.UpdateStatus(ctx, w1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	if out := c.mustKubectl(t, "", "get", "widget", "w1", "-o", "jsonpath={.status.replicas} {.metadata.generation}"); out != "3 2" {
		t.Errorf("after a status update: %q", out)
	}
	if out := c.mustKubectl(t, "", "get", "widget", "w1", "-o", "jsonpath={.status.replicas}", "--subresource=scale"); out != "3" {
		t.Errorf("scale status: %q", out)
	}

	// Watch, list with pagination and a field selector, patch.
	w, err := widgets.Watch(ctx, metav1.ListOptions{ResourceVersion: w1.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, name := range []string{"w4", "w5", "w6"} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": name}, "spec": map[string]any{"color": "blue"}}}
		if _, err := widgets.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < 4 {
		select {
		case ev := <-w.ResultChan():
			seen[ev.Object.(*unstructured.Unstructured).GetName()] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("watch saw only %v", seen)
		}
	}
	page, err := widgets.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil || len(page.Items) != 2 || page.GetContinue() == "" {
		t.Fatalf("first page: %v %d items continue %q", err, len(page.Items), page.GetContinue())
	}
	rest, err := widgets.List(ctx, metav1.ListOptions{Limit: 2, Continue: page.GetContinue()})
	if err != nil || len(rest.Items) != 2 {
		t.Fatalf("second page: %v %d", err, len(rest.Items))
	}
	byName, err := widgets.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=w5"})
	if err != nil || len(byName.Items) != 1 || byName.Items[0].GetName() != "w5" {
		t.Errorf("field selector metadata.name: %v %v", err, byName)
	}
	c.mustKubectl(t, "", "patch", "widget", "w4", "--type=merge", "-p", `{"spec":{"color":"green","size":"large"}}`)
	if out := c.mustKubectl(t, "", "get", "widget", "w4", "-o", "jsonpath={.spec.color} {.spec.size}"); out != "green large" {
		t.Errorf("after a merge patch: %q", out)
	}
	// A transition rule (oldSelf) holds on update only.
	c.mustKubectl(t, "", "patch", "widget", "w4", "--type=merge", "-p", `{"spec":{"zone":"a"}}`)
	if out, err := c.kubectl(t, "", "patch", "widget", "w4", "--type=merge", "-p", `{"spec":{"zone":"b"}}`); err == nil || !strings.Contains(out, `spec.zone: Invalid value: "b": zone is immutable`) {
		t.Errorf("transition rule: %v\n%s", err, out)
	}
	// A custom resource takes no strategic merge patch: kubectl's default type gets kube's 415
	// (apiextensions-apiserver's supported patch types), which kubectl names.
	const noSMP = `error: application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget: ` +
		`the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`
	if out, err := c.kubectl(t, "", "patch", "widget", "w4", "-p", `{"spec":{"color":"blue"}}`); err == nil || strings.TrimSpace(out) != noSMP {
		t.Errorf("strategic merge patch of a custom resource: %v\n%s\nwant %s", err, out, noSMP)
	}
	c.mustKubectl(t, "", "delete", "widget", "w4")
	if _, err := widgets.Get(ctx, "w4", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after delete: %v", err)
	}

	// Deleting the CRD deletes its custom resources first (upstream's finalizer, added by
	// the deletion as kube-apiserver adds it: a CRD has none before), then itself; its
	// resources are served no more.
	if before := c.mustKubectl(t, "", "get", "crd", "widgets.example.com", "-o", "jsonpath={.metadata.finalizers}"); before != "" {
		t.Errorf("finalizers of a CRD before its deletion: %s, want none", before)
	}
	if out := c.mustKubectl(t, "", "delete", "crd", "widgets.example.com", "--timeout=30s"); !strings.Contains(out, "deleted") {
		t.Errorf("delete crd:\n%s", out)
	}
	if out, err := c.kubectl(t, "", "get", "crd", "widgets.example.com"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("the CRD is still there: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := widgets.List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("widgets still served after the CRD's deletion: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Created again, the CRD serves no custom resource of the old one.
	c.applyCRD(t, widgetsCRD, "widgets.example.com")
	eventually(t, c, "get", "wd")
	if list, err := widgets.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("custom resources outlived their CRD: %v %v", err, list)
	}
}

// applyCRD applies a CustomResourceDefinition manifest and waits until the CRD name is established.
func (c *cluster) applyCRD(t *testing.T, manifest, name string) {
	t.Helper()
	c.mustKubectl(t, manifest, "apply", "-f", "-")
	c.waitEstablished(t, "crd/"+name)
}

// waitEstablished waits until the CRDs (names, or --all) are established. kubectl wait
// fails instead of waiting while a new CRD's status.conditions is still null (it is in
// kube-apiserver too, until the naming controller's first write): try it again then.
func (c *cluster) waitEstablished(t *testing.T, names ...string) string {
	t.Helper()
	args := append([]string{"wait", "--for=condition=Established", "--timeout=20s"}, names...)
	return eventually(t, c, args...)
}

// customResources is a dynamic client of a resource in the default namespace.
func customResources(cfg *rest.Config, group, version, resource string) dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: resource}).Namespace("default")
}

// A deprecated version of a CRD warns on every request to it, as kube-apiserver does:
// with the CRD's deprecationWarning, else upstream's message naming the newest served
// version that is not deprecated; requests to other versions carry no warning.
func TestCustomResourceDeprecatedVersion(t *testing.T) {
	c := startCluster(t)
	c.applyCRD(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gauges.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gauges, singular: gauge, kind: Gauge}
  versions:
  - {name: v1alpha1, served: true, storage: false, deprecated: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1beta1, served: true, storage: false, deprecated: true, deprecationWarning: "example.com/v1beta1 Gauge goes in 2027",
     schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v2, served: false, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`, "gauges.example.com")
	eventually(t, c, "get", "gauges")
	const alpha = "Warning: example.com/v1alpha1 Gauge is deprecated; use example.com/v1 Gauge"
	if out := c.mustKubectl(t, "apiVersion: example.com/v1alpha1\nkind: Gauge\nmetadata: {name: g}\n", "create", "-f", "-"); !strings.Contains(out, alpha) {
		t.Errorf("create at v1alpha1:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "get", "gauges.v1alpha1.example.com", "g"); !strings.Contains(out, alpha) {
		t.Errorf("get at v1alpha1:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "label", "gauges.v1beta1.example.com", "g", "a=b"); !strings.Contains(out, "Warning: example.com/v1beta1 Gauge goes in 2027") {
		t.Errorf("patch at v1beta1:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "get", "gauges.v1.example.com", "g"); strings.Contains(out, "Warning") {
		t.Errorf("get at v1:\n%s", out)
	}
}

// While a CustomResourceDefinition is being deleted (its custom resources going first),
// kube-apiserver refuses new custom resources of it with a Forbidden naming the reason, and
// discovery lists only the verbs still allowed; custom resources that are there may
// still be changed (a controller removing its finalizer). Discovery lists a CRD's verbs in
// apiextensions-apiserver's order, not sorted as a built-in resource's.
func TestCustomResourceDefinitionTerminating(t *testing.T) {
	c := startCluster(t)
	c.applyCRD(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gauges.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gauges, singular: gauge, kind: Gauge}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`, "gauges.example.com")
	eventually(t, c, "get", "gauges")
	if out := c.mustKubectl(t, "", "api-resources", "--api-group=example.com", "-o", "wide"); !strings.Contains(out, "delete,deletecollection,get,list,patch,create,update,watch") {
		t.Errorf("verbs of a served CRD:\n%s", out)
	}
	c.mustKubectl(t, "apiVersion: example.com/v1\nkind: Gauge\nmetadata: {name: held, finalizers: [example.com/hold]}\n", "create", "-f", "-")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watcher, err := customResources(c.adminConfig(t), "example.com", "v1", "gauges").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	c.mustKubectl(t, "", "delete", "crd", "gauges.example.com", "--wait=false")
	c.mustKubectl(t, "", "wait", "--for=condition=Terminating", "--timeout=20s", "crd/gauges.example.com")
	// The API server serves the terminating CRD once its informer has seen the condition.
	const refused = `Error from server (Forbidden): error when creating "STDIN": gauges.example.com "new" is forbidden: create not allowed while custom resource definition is terminating`
	var out string
	waitFor(t, "a create refused", func() bool {
		var err error
		if out, err = c.kubectl(t, "apiVersion: example.com/v1\nkind: Gauge\nmetadata: {name: new}\n", "create", "-f", "-"); err == nil {
			c.mustKubectl(t, "", "delete", "gauge", "new", "--ignore-not-found")
		}
		return strings.TrimSpace(out) == refused
	})
	if out, err := c.kubectl(t, "apiVersion: example.com/v1\nkind: Gauge\nmetadata: {name: applied}\n", "apply", "--server-side", "-f", "-"); err == nil || !strings.Contains(out, `gauges.example.com "applied" is forbidden: create not allowed while custom resource definition is terminating`) {
		t.Errorf("server-side apply creating while terminating: %v\n%s", err, out)
	}
	if out := c.mustKubectl(t, "", "api-resources", "--api-group=example.com", "-o", "wide"); !strings.Contains(out, "delete,deletecollection,get,list,watch") {
		t.Errorf("verbs of a terminating CRD:\n%s", out)
	}
	c.mustKubectl(t, "", "patch", "gauge", "held", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	c.waitFor(t, "", "get", "crd", "--ignore-not-found", "gauges.example.com")
	// The resource's watches end with it, as kube-apiserver's crdHandler tears its storage down.
	timeout := time.After(30 * time.Second)
	for {
		select {
		case _, open := <-watcher.ResultChan():
			if !open {
				return
			}
		case <-timeout:
			t.Fatal("a watch of gauges is still open 30 s after its CRD went")
		}
	}
}
