package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func startWebhook(t *testing.T) *httptest.Server {
	t.Helper()
	w := &webhook{sidecarImage: "sidecar:1", allowDelay: 50 * time.Millisecond}
	server := httptest.NewServer(w.routes())
	t.Cleanup(server.Close)
	return server
}

// review posts an AdmissionReview of apiVersion to path and returns the response,
// checking the answer's apiVersion, kind and uid echo the request's.
func review(t *testing.T, server *httptest.Server, path, apiVersion string, req admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	req.UID = types.UID("uid-" + path)
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "AdmissionReview"}, Request: &req})
	resp, err := http.Post(server.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s %s", path, resp.Status, out)
	}
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, out)
	}
	if got.APIVersion != apiVersion || got.Kind != "AdmissionReview" || got.Response == nil || got.Response.UID != req.UID {
		t.Fatalf("POST %s: answer %s, want an AdmissionReview %s with uid %s", path, out, apiVersion, req.UID)
	}
	return got.Response
}

func request(op admissionv1.Operation, resource metav1.GroupVersionResource, obj any) admissionv1.AdmissionRequest {
	raw, _ := json.Marshal(obj)
	req := admissionv1.AdmissionRequest{Operation: op, Resource: resource, Object: runtime.RawExtension{Raw: raw}}
	if op == admissionv1.Delete {
		req.Object, req.OldObject = runtime.RawExtension{}, runtime.RawExtension{Raw: raw}
	}
	return req
}

// patched applies a response's JSON patch to obj, as the API server does.
func patched(t *testing.T, resp *admissionv1.AdmissionResponse, obj, into any) {
	t.Helper()
	raw, _ := json.Marshal(obj)
	if len(resp.Patch) > 0 {
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("patch without patchType JSONPatch: %+v", resp)
		}
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = patch.Apply(raw); err != nil {
			t.Fatalf("patch %s: %v", resp.Patch, err)
		}
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatal(err)
	}
}

func message(resp *admissionv1.AdmissionResponse) string {
	if resp.Result == nil {
		return ""
	}
	return resp.Result.Message + string(resp.Result.Reason)
}

// TestWebhookReviewVersions: v1 and v1beta1 reviews are answered in their own version;
// anything else is a 400, a body not of JSON a 415.
func TestWebhookReviewVersions(t *testing.T) {
	server := startWebhook(t)
	for _, version := range []string{"admission.k8s.io/v1", "admission.k8s.io/v1beta1"} {
		resp := review(t, server, "/always-deny", version, request(admissionv1.Create, podsResource, corev1.Pod{}))
		if resp.Allowed || message(resp) != "this webhook denies all requests" {
			t.Errorf("%s /always-deny: %+v", version, resp)
		}
	}
	bad, _ := http.Post(server.URL+"/always-deny", "application/json", strings.NewReader(`{"apiVersion":"v1","kind":"Pod"}`))
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("a Pod posted: %s, want 400", bad.Status)
	}
	yaml, _ := http.Post(server.URL+"/always-deny", "application/yaml", strings.NewReader("{}"))
	yaml.Body.Close()
	if yaml.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("YAML posted: %s, want 415", yaml.Status)
	}
	ready, err := http.Get(server.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ready.Body)
	ready.Body.Close()
	if string(body) != "ok" {
		t.Errorf("/readyz: %q", body)
	}
}

// TestWebhookAllowDelayed: /always-allow-delay-5s allows after its delay, with upstream's
// message, and gives up when the caller does (the e2e "should honor timeout" test).
func TestWebhookAllowDelayed(t *testing.T) {
	server := startWebhook(t)
	start := time.Now()
	resp := review(t, server, "/always-allow-delay-5s", "admission.k8s.io/v1", request(admissionv1.Create, configMapsResource, corev1.ConfigMap{}))
	if !resp.Allowed || message(resp) != "this webhook allows all requests" || time.Since(start) < 50*time.Millisecond {
		t.Errorf("/always-allow-delay-5s answered %+v after %v", resp, time.Since(start))
	}
}

// TestWebhookPods: the denials and mutations the e2e asserts on pods.
func TestWebhookPods(t *testing.T) {
	server := startWebhook(t)
	v1 := "admission.k8s.io/v1"
	bad := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "disallowed-pod", Labels: map[string]string{"webhook-e2e-test": "webhook-disallow"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "webhook-disallow", Image: "pause"}}}}
	resp := review(t, server, "/pods", v1, request(admissionv1.Create, podsResource, bad))
	if resp.Allowed || !strings.Contains(message(resp), "the pod contains unwanted container name") || !strings.Contains(message(resp), "the pod contains unwanted label") {
		t.Errorf("/pods on a disallowed pod: %+v", resp)
	}
	good := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ok"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
	if resp := review(t, server, "/pods", v1, request(admissionv1.Create, podsResource, good)); !resp.Allowed {
		t.Errorf("/pods on an ordinary pod: %+v", resp)
	}
	if resp := review(t, server, "/pods", v1, request(admissionv1.Create, configMapsResource, good)); resp.Allowed {
		t.Errorf("/pods on a configmap: %+v", resp)
	}

	// wait-forever never answers: the caller's deadline ends the call.
	hang := good
	hang.Labels = map[string]string{"webhook-e2e-test": "wait-forever"}
	req := request(admissionv1.Create, podsResource, hang)
	body, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: v1, Kind: "AdmissionReview"}, Request: &req})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, server.URL+"/pods", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(r); err == nil {
		resp.Body.Close()
		t.Errorf("wait-forever answered %s", resp.Status)
	}

	mutated := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "webhook-to-be-mutated"}, Spec: good.Spec}
	resp = review(t, server, "/mutating-pods", v1, request(admissionv1.Create, podsResource, mutated))
	var got corev1.Pod
	patched(t, resp, mutated, &got)
	if len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Name != "webhook-added-init-container" || got.Spec.InitContainers[0].Image != "webhook-added-image" {
		t.Errorf("/mutating-pods: init containers %+v", got.Spec.InitContainers)
	}
	if resp := review(t, server, "/mutating-pods", v1, request(admissionv1.Create, podsResource, got)); len(resp.Patch) != 0 {
		t.Errorf("/mutating-pods patched a mutated pod again: %s", resp.Patch)
	}
	if resp := review(t, server, "/mutating-pods", v1, request(admissionv1.Create, podsResource, good)); len(resp.Patch) != 0 || !resp.Allowed {
		t.Errorf("/mutating-pods patched pod %q: %+v", good.Name, resp)
	}

	resp = review(t, server, "/mutating-pods-sidecar", v1, request(admissionv1.Create, podsResource, good))
	got = corev1.Pod{}
	patched(t, resp, good, &got)
	if n := len(got.Spec.Containers); n != 2 || got.Spec.Containers[1].Name != "webhook-added-sidecar" || got.Spec.Containers[1].Image != "sidecar:1" {
		t.Errorf("/mutating-pods-sidecar: containers %+v", got.Spec.Containers)
	}
}

// TestWebhookAttach: `kubectl attach -i -c container1 to-be-attached-pod` is refused with
// the message the e2e matches; other attachments are allowed.
func TestWebhookAttach(t *testing.T) {
	server := startWebhook(t)
	attach := func(name string, options corev1.PodAttachOptions) *admissionv1.AdmissionResponse {
		req := request(admissionv1.Connect, podsResource, options)
		req.Name, req.SubResource = name, "attach"
		return review(t, server, "/pods/attach", "admission.k8s.io/v1", req)
	}
	resp := attach("to-be-attached-pod", corev1.PodAttachOptions{Stdin: true, Container: "container1"})
	if resp.Allowed || message(resp) != "attaching to pod 'to-be-attached-pod' is not allowed" {
		t.Errorf("attach -i -c container1: %+v", resp)
	}
	if resp := attach("to-be-attached-pod", corev1.PodAttachOptions{Container: "container1"}); !resp.Allowed {
		t.Errorf("attach without stdin: %+v", resp)
	}
	if resp := attach("other", corev1.PodAttachOptions{Stdin: true, Container: "container1"}); !resp.Allowed {
		t.Errorf("attach to another pod: %+v", resp)
	}
}

// TestWebhookData: the configmap and custom resource endpoints deny the e2e's
// disallowed data on create and update, nondeletable data on delete, and mutate in two
// stages.
func TestWebhookData(t *testing.T) {
	server := startWebhook(t)
	v1beta1 := "admission.k8s.io/v1beta1"
	crResource := metav1.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "e2e-test-webhook-crds"}
	for _, c := range []struct {
		path         string
		resource     metav1.GroupVersionResource
		disallowed   string
		nondeletable string
	}{
		{"/configmaps", configMapsResource, "the configmap contains unwanted key and value", "the configmap cannot be deleted because it contains unwanted key and value"},
		{"/custom-resource", crResource, "the custom resource contains unwanted data", "the custom resource cannot be deleted because it contains unwanted key and value"},
	} {
		obj := func(value string) map[string]any {
			return map[string]any{"metadata": map[string]any{"name": "x"}, "data": map[string]string{"webhook-e2e-test": value}}
		}
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			if resp := review(t, server, c.path, v1beta1, request(op, c.resource, obj("webhook-disallow"))); resp.Allowed || message(resp) != c.disallowed {
				t.Errorf("%s %s disallowed: %+v", op, c.path, resp)
			}
			if resp := review(t, server, c.path, v1beta1, request(op, c.resource, obj("webhook-nondeletable"))); !resp.Allowed {
				t.Errorf("%s %s nondeletable: %+v", op, c.path, resp)
			}
		}
		if resp := review(t, server, c.path, v1beta1, request(admissionv1.Delete, c.resource, obj("webhook-nondeletable"))); resp.Allowed || message(resp) != c.nondeletable {
			t.Errorf("DELETE %s nondeletable: %+v", c.path, resp)
		}
		if resp := review(t, server, c.path, v1beta1, request(admissionv1.Delete, c.resource, obj("webhook-allow"))); !resp.Allowed {
			t.Errorf("DELETE %s: %+v", c.path, resp)
		}
	}

	// Two mutating webhooks in a row, as the e2e registers them.
	for _, c := range []struct {
		path     string
		resource metav1.GroupVersionResource
	}{{"/mutating-configmaps", configMapsResource}, {"/mutating-custom-resource", crResource}} {
		obj := map[string]any{"metadata": map[string]any{"name": "x"}, "data": map[string]string{"mutation-start": "yes"}}
		for range 2 {
			var next map[string]any
			patched(t, review(t, server, c.path, v1beta1, request(admissionv1.Create, c.resource, obj)), obj, &next)
			obj = next
		}
		want := map[string]any{"mutation-start": "yes", "mutation-stage-1": "yes", "mutation-stage-2": "yes"}
		if !reflect.DeepEqual(obj["data"], want) {
			t.Errorf("%s twice: data %v, want %v", c.path, obj["data"], want)
		}
	}
}

// TestWebhookCRD: /crd denies CRDs labelled webhook-e2e-test=webhook-disallow.
func TestWebhookCRD(t *testing.T) {
	server := startWebhook(t)
	crds := metav1.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := func(labels map[string]string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "e2e-test.example.com", "labels": labels}}
	}
	resp := review(t, server, "/crd", "admission.k8s.io/v1", request(admissionv1.Create, crds, crd(map[string]string{"webhook-e2e-test": "webhook-disallow"})))
	if resp.Allowed || message(resp) != "the crd contains unwanted label" {
		t.Errorf("/crd on a disallowed CRD: %+v", resp)
	}
	if resp := review(t, server, "/crd", "admission.k8s.io/v1", request(admissionv1.Create, crds, crd(nil))); !resp.Allowed {
		t.Errorf("/crd on an ordinary CRD: %+v", resp)
	}
}

// TestWebhookAddLabel: /add-label leaves every object labelled added-label=yes, whatever
// labels it had.
func TestWebhookAddLabel(t *testing.T) {
	server := startWebhook(t)
	for _, labels := range []map[string]string{nil, {"a": "b"}, {"added-label": "no"}, {"added-label": "yes"}} {
		obj := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: labels}}
		var got corev1.ConfigMap
		patched(t, review(t, server, "/add-label", "admission.k8s.io/v1", request(admissionv1.Create, configMapsResource, obj)), obj, &got)
		want := map[string]string{"added-label": "yes"}
		for k, v := range labels {
			if k != "added-label" {
				want[k] = v
			}
		}
		if !reflect.DeepEqual(got.Labels, want) {
			t.Errorf("/add-label on labels %v: %v", labels, got.Labels)
		}
	}
}
