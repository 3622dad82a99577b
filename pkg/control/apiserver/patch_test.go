package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A patch that cannot be applied, or whose result is not an object of the kind, answers
// with the status, reason and message kube-apiserver's patch handler gives
// (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go): kubectl prints those as
// they are, e.g. "The request is invalid: the server rejected our request due to an error
// in our request" for a JSON patch whose test fails.
func TestPatchErrorsAsKubeAPIServer(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("a", "web")); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	const pod = "/api/v1/namespaces/default/pods/a"
	const (
		jsonPatch  = "application/json-patch+json"
		mergePatch = "application/merge-patch+json"
		smp        = "application/strategic-merge-patch+json"
	)
	const rejected = "the server rejected our request due to an error in our request"
	for _, tc := range []struct {
		name, contentType, query, patch string
		code                            int32
		reason                          metav1.StatusReason
		message                         string // the whole message, or its start when it ends in "..."
		causeField                      string
	}{
		{"json patch test fails", jsonPatch, "", `[{"op":"test","path":"/metadata/name","value":"b"}]`, 422, metav1.StatusReasonInvalid, rejected, ""},
		{"json patch replaces a key of a missing object", jsonPatch, "", `[{"op":"replace","path":"/metadata/annotations/nope","value":"x"}]`, 422, metav1.StatusReasonInvalid, rejected, ""},
		{"json patch replaces a missing array index", jsonPatch, "", `[{"op":"replace","path":"/spec/containers/1","value":{}}]`, 422, metav1.StatusReasonInvalid, rejected, ""},
		{"json patch removes a missing path", jsonPatch, "", `[{"op":"remove","path":"/nope/x"}]`, 422, metav1.StatusReasonInvalid, rejected, ""},
		{"json patch replacing the whole object without a value", jsonPatch, "", `[{"op":"replace","path":""}]`, 422, metav1.StatusReasonInvalid, rejected, ""},
		{"json patch of an unknown operation", jsonPatch, "", `[{"op":"bogus","path":"/spec"}]`, 422, metav1.StatusReasonInvalid, rejected, ""},
		{"json patch that is no list", jsonPatch, "", `{"a":1}`, 400, metav1.StatusReasonBadRequest, "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp", ""},
		{"json patch that is no list, unvalidated", jsonPatch, "?fieldValidation=Ignore", `{"a":1}`, 400, metav1.StatusReasonBadRequest, "json: cannot unmarshal object into Go value of type jsonpatch.Patch", ""},
		{"json patch that is no JSON, unvalidated", jsonPatch, "?fieldValidation=Ignore", `[`, 400, metav1.StatusReasonBadRequest, "unexpected end of JSON input", ""},
		{"json patch of a duplicate field, strictly", jsonPatch, "?fieldValidation=Strict", `[{"op":"add","op":"add","path":"/metadata/labels/x","value":"y"}]`, 422, metav1.StatusReasonInvalid,
			` "" is invalid: patch: Invalid value: "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",...`, "patch"},
		{"json patch giving a wrong type", jsonPatch, "", `[{"op":"replace","path":"/spec/containers","value":"x"}]`, 422, metav1.StatusReasonInvalid,
			` "" is invalid: patch: Invalid value: "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",...`, "patch"},
		{"merge patch that is no JSON", mergePatch, "", `{`, 400, metav1.StatusReasonBadRequest, "error decoding patch: unexpected end of JSON input", ""},
		{"merge patch that is no JSON, unvalidated", mergePatch, "?fieldValidation=Ignore", `{`, 400, metav1.StatusReasonBadRequest, "Invalid JSON Patch", ""},
		{"merge patch of null", mergePatch, "", `null`, 400, metav1.StatusReasonBadRequest, "Invalid JSON Patch", ""},
		{"merge patch of a number, unvalidated", mergePatch, "?fieldValidation=Ignore", `5`, 400, metav1.StatusReasonBadRequest, "Invalid JSON Patch", ""},
		{"merge patch giving a wrong type", mergePatch, "", `{"spec":{"containers":"x"}}`, 422, metav1.StatusReasonInvalid,
			` "" is invalid: patch: Invalid value: "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",...`, "patch"},
		{"merge patch of an unknown field, strictly", mergePatch, "?fieldValidation=Strict", `{"spec":{"foo":1}}`, 422, metav1.StatusReasonInvalid,
			` "" is invalid: patch: Invalid value: "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",...`, "patch"},
		{"strategic patch of an unknown field, strictly", smp, "?fieldValidation=Strict", `{"spec":{"foo":1}}`, 422, metav1.StatusReasonInvalid,
			` "" is invalid: patch: Invalid value: "map[spec:map[foo:1]]": strict decoding error: unknown field "spec.foo"`, "patch"},
		{"strategic patch of a bad retainKeys", smp, "", `{"spec":{"$retainKeys":"x"}}`, 400, metav1.StatusReasonBadRequest, "invalid patch format of retainKeys", ""},
		{"strategic patch of an unknown $patch", smp, "", `{"spec":{"$patch":"bogus"}}`, 500, "", "unknown patch type: bogus in map: map[$patch:bogus]", ""},
		{"strategic patch that is no JSON", smp, "", `{`, 400, metav1.StatusReasonBadRequest, "unexpected end of JSON input", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := patchAs(h, tc.contentType, pod+tc.query, tc.patch)
			st := apitest.ResponseStatus(t, w.Body.Bytes())
			msgOK := st.Message == tc.message
			if prefix, ok := strings.CutSuffix(tc.message, "..."); ok {
				msgOK = strings.HasPrefix(st.Message, prefix)
			}
			if int32(w.Code) != tc.code || st.Code != tc.code || st.Reason != tc.reason || !msgOK {
				t.Errorf("got %d %s %q\nwant %d %s %q", st.Code, st.Reason, st.Message, tc.code, tc.reason, tc.message)
			}
			if tc.causeField != "" && (st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != tc.causeField ||
				st.Details.Causes[0].Type != metav1.CauseTypeFieldValueInvalid) {
				t.Errorf("details: %+v, want one FieldValueInvalid cause on %s", st.Details, tc.causeField)
			}
		})
	}
	// A JSON or merge patch that makes the pod another kind, or of a version the scheme does
	// not know, fails on the patched object with kube's decoder's words (compared with
	// kube-apiserver v1.36.3); a strategic one goes through the typed object and cannot.
	for _, tc := range []struct{ contentType, patch, errEnd string }{
		{mergePatch, `{"kind":"Secret"}`, `": converting (v1.Secret) to (core.Pod): unknown conversion`},
		{jsonPatch, `[{"op":"replace","path":"/kind","value":"Service"}]`, `": converting (v1.Service) to (core.Pod): unknown conversion`},
		{mergePatch, `{"apiVersion":"v2"}`, `": no kind "Pod" is registered for version "v2" in scheme "pkg/runtime/scheme.go:111"`},
		{mergePatch, `{"apiVersion":"apps/v1"}`, `": no kind "Pod" is registered for version "apps/v1" in scheme "pkg/runtime/scheme.go:111"`},
	} {
		w := patchAs(h, tc.contentType, pod, tc.patch)
		if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusUnprocessableEntity || !strings.HasPrefix(st.Message, ` "" is invalid: patch: Invalid value: "{`) || !strings.HasSuffix(st.Message, tc.errEnd) {
			t.Errorf("%s %s: %d %q\nwant 422 ending %q", tc.contentType, tc.patch, w.Code, st.Message, tc.errEnd)
		}
	}
	for _, p := range []string{`{"kind":"Secret"}`, `{"kind":null}`} {
		if w := patchAs(h, smp, pod, p); w.Code != http.StatusOK {
			t.Errorf("strategic patch %s: %d %s", p, w.Code, w.Body)
		}
	}

	// json-patch v4 adds (or replaces) without a value as null: the label becomes "".
	if w := patchAs(h, jsonPatch, pod, `[{"op":"add","path":"/metadata/labels/x"}]`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"labels":{"app":"web","x":""}`) {
		t.Errorf("json patch adding without a value: %d %s", w.Code, w.Body)
	}
	// kube's json-patch (v4) replaces a key an object lacks by setting it: kube-apiserver
	// v1.36.3 patches the pod, in the same order as the other operations.
	patch := `[{"op":"replace","path":"/metadata/labels/nope","value":"x"},{"op":"test","path":"/metadata/labels/nope","value":"x"},{"op":"add","path":"/metadata/labels/b","value":"y"}]`
	if w := patchAs(h, jsonPatch, pod, patch); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"labels":{"app":"web","b":"y","nope":"x","x":""}`) {
		t.Errorf("json patch replacing a missing label: %d %s", w.Code, w.Body)
	}
}

// A request body or a patch of a media type the resource does not take gets kube's 415, which
// names the types it accepts (handlers/negotiation's errUnsupportedMediaType).
func TestUnsupportedMediaTypesAsKubeAPIServer(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("a", "web")); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	// A kind the scheme does not know is a custom resource's: JSON and YAML only.
	if err := unsupportedBody(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}); err.Error() !=
		"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml" {
		t.Errorf("a custom resource's body: %v", err)
	}
	for _, tc := range []struct{ method, path, contentType, want string }{
		{"PATCH", "/api/v1/namespaces/default/pods/a", "text/plain",
			"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"},
		{"PATCH", "/api/v1/namespaces/default/pods/a", "",
			"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"},
		{"POST", "/api/v1/namespaces/default/pods", "text/plain",
			"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
	} {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}"))
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusUnsupportedMediaType ||
			st.Reason != metav1.StatusReasonUnsupportedMediaType || st.Message != tc.want {
			t.Errorf("%s %q: %d %s\nwant 415 %q", tc.method, tc.contentType, w.Code, w.Body, tc.want)
		}
	}
}

// A JSON patch's copies may add at most 3 MiB to the object, json-patch v4's limit as
// kube-apiserver sets it (JSONPatchMaxCopyBytes); past it the patch does not apply: kube's
// 422 of any such patch, not a 413.
func TestJSONPatchCopyLimit(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	p := podNamed("a", "web")
	p.Annotations = map[string]string{"big": strings.Repeat("x", 64<<10)}
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", p); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	// Copies of 64 KiB, then of /z doubled n times: 64 KiB << n added in all.
	doubling := func(n int) string {
		ops := []string{`{"op":"add","path":"/z","value":[]}`, `{"op":"copy","from":"/metadata/annotations/big","path":"/z/-"}`}
		for range n {
			ops = append(ops, `{"op":"copy","from":"/z","path":"/z/-"}`)
		}
		return "[" + strings.Join(ops, ",") + "]"
	}
	const pod = "/api/v1/namespaces/default/pods/a?fieldValidation=Ignore"
	if w := patchAs(h, "application/json-patch+json", pod, doubling(5)); w.Code != http.StatusOK {
		t.Errorf("copies adding 2 MiB: %d %.300s", w.Code, w.Body)
	}
	w := patchAs(h, "application/json-patch+json", pod, doubling(6))
	if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid ||
		st.Message != "the server rejected our request due to an error in our request" {
		t.Errorf("copies adding 4 MiB: %d %+v, want kube's 422", w.Code, st)
	}
}
