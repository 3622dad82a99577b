package apiserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A bad selector or limit is refused in kube-apiserver's words: the parser's error as it is,
// and for an unknown field label the words of the kind's field label conversion (kinds with
// selectable fields of their own) or of apimachinery's default (all others, ReplicaSets
// included: apps/v1 registers no conversion for their status.replicas).
func TestListParameterErrors(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	for _, tc := range []struct{ path, query, want string }{
		{"/api/v1/namespaces/default/pods", "labelSelector=a in (b", `unable to parse requirement: found '', expected: ',' or ')'`},
		{"/api/v1/namespaces/default/pods", "labelSelector=a===b", `unable to parse requirement: found '=', expected: identifier`},
		{"/api/v1/namespaces/default/pods", "fieldSelector=a", `invalid selector: 'a'; can't understand 'a'`},
		{"/api/v1/namespaces/default/pods", "fieldSelector=a==b=c", `invalid field selector: unescaped character in value: 61`},
		{"/api/v1/namespaces/default/pods", "fieldSelector=spec.host2=x", `field label not supported: spec.host2`},
		{"/api/v1/nodes", "fieldSelector=metadata.namespace=x", `field label not supported: metadata.namespace`},
		{"/api/v1/namespaces", "fieldSelector=metadata.namespace=x", `field label not supported: metadata.namespace`},
		{"/api/v1/namespaces/default/configmaps", "fieldSelector=data.x=1", `"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"/apis/apps/v1/namespaces/default/replicasets", "fieldSelector=status.replicas=0", `"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"/api/v1/namespaces/default/pods", "limit=x", `strconv.ParseInt: parsing "x": invalid syntax`},
		{"/api/v1/namespaces/default/pods", "watch=1&timeoutSeconds=x", `strconv.ParseInt: parsing "x": invalid syntax`},
		{"/api/v1/namespaces/default/pods", "timeoutSeconds=x", `strconv.ParseInt: parsing "x": invalid syntax`},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		w := do(t, h, "GET", tc.path+"?"+q.Encode(), nil)
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != http.StatusBadRequest || status.Reason != metav1.StatusReasonBadRequest || status.Message != tc.want {
			t.Errorf("%s?%s: %d %s %q, want 400 BadRequest %q", tc.path, tc.query, w.Code, status.Reason, status.Message, tc.want)
		}
	}
	// Known labels, and a negative limit (no limit, as kube-apiserver's storage takes it).
	for _, path := range []string{
		"/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3Dn1,metadata.namespace%3Ddefault",
		"/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse,metadata.name%3Dn1",
		"/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dx",
		"/api/v1/namespaces/default/replicationcontrollers?fieldSelector=status.replicas%3D0",
		"/api/v1/namespaces/default/pods?limit=-1",
	} {
		if w := do(t, h, "GET", path, nil); w.Code != http.StatusOK {
			t.Errorf("%s: %d %s", path, w.Code, w.Body)
		}
	}
	// A negative timeoutSeconds has passed already: the watch ends at once, as
	// kube-apiserver's timer of that duration fires at once.
	done := make(chan int)
	go func() { done <- do(t, h, "GET", "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=-1", nil).Code }()
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Errorf("watch with timeoutSeconds=-1: %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch with timeoutSeconds=-1 still open after 10s")
	}
}

// DeleteOptions come from the body or, without one, from the query, and are validated as
// kube-apiserver's ValidateDeleteOptions does (422 on DeleteOptions).
func TestDeleteOptionsErrors(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const path = "/api/v1/namespaces/default/configmaps/c"
	for _, tc := range []struct {
		query string
		body  any
		code  int
		want  string
	}{
		{"?propagationPolicy=Sideways", nil, http.StatusUnprocessableEntity,
			`DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"`},
		{"", map[string]any{"orphanDependents": true, "propagationPolicy": "Foreground"}, http.StatusUnprocessableEntity,
			`DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Foreground": orphanDependents and deletionPropagation cannot be both set`},
		{"?dryRun=Bogus", nil, http.StatusUnprocessableEntity,
			`DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"`},
		{"?gracePeriodSeconds=x", nil, http.StatusBadRequest, `strconv.ParseInt: parsing "x": invalid syntax`},
	} {
		w := do(t, h, "DELETE", path+tc.query, tc.body)
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != tc.code || status.Message != tc.want {
			t.Errorf("%s %v: %d %q, want %d %q", tc.query, tc.body, w.Code, status.Message, tc.code, tc.want)
		}
	}
}

// A write's dryRun other than All is refused as kube-apiserver's validation of the write's
// options refuses it; a dry-run create of a name already taken is refused as the real create
// would be (kube's DryRunnableStorage.Create looks the key up), not answered 201 with an
// object never stored.
func TestDryRunErrors(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}
	if w := do(t, h, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All", cm); w.Code != http.StatusCreated {
		t.Fatalf("dry-run create of a new name: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "POST", "/api/v1/namespaces/default/configmaps", cm); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	w := do(t, h, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All", cm)
	const taken = `configmaps "c" already exists`
	if status := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusConflict || status.Reason != metav1.StatusReasonAlreadyExists || status.Message != taken {
		t.Errorf("dry-run create of a taken name: %d %s %q, want 409 AlreadyExists %q", w.Code, status.Reason, status.Message, taken)
	}
	for _, tc := range []struct{ method, path, options string }{
		{"POST", "/api/v1/namespaces/default/configmaps", "CreateOptions"},
		{"PUT", "/api/v1/namespaces/default/configmaps/c", "UpdateOptions"},
	} {
		w := do(t, h, tc.method, tc.path+"?dryRun=Bogus", cm)
		want := tc.options + `.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"`
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != http.StatusUnprocessableEntity || status.Message != want {
			t.Errorf("%s dryRun=Bogus: %d %q, want 422 %q", tc.method, w.Code, status.Message, want)
		}
	}
}

// A resourceVersion that is not a number: a LIST is refused in the words of kube-apiserver's
// storage.ValidateListOptions, a GET and a WATCH (before its stream begins) in those of its
// watch cache; all as 400s (kube-apiserver answers the GET and WATCH with a 500,
// kubernetes/kubernetes#139485, which miniapi does not copy).
func TestResourceVersionNotANumber(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	for _, rv := range []string{"abc", "-1"} {
		invalid := `resourceVersion: Invalid value: "` + rv + `": strconv.ParseUint: parsing "` + rv + `": invalid syntax`
		for _, tc := range []struct {
			path   string
			code   int
			reason metav1.StatusReason
			want   string
		}{
			{"/api/v1/namespaces/default/pods/p?resourceVersion=", http.StatusBadRequest, metav1.StatusReasonBadRequest, invalid},
			{"/api/v1/namespaces/default/pods?watch=1&resourceVersion=", http.StatusBadRequest, metav1.StatusReasonBadRequest, invalid},
			{"/api/v1/namespaces/default/pods?resourceVersion=", http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid resource version: " + invalid},
			{"/api/v1/namespaces/default/pods?limit=1&resourceVersion=", http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid resource version: " + invalid},
		} {
			w := do(t, h, "GET", tc.path+rv, nil)
			status := apitest.ResponseStatus(t, w.Body.Bytes())
			if w.Code != tc.code || int(status.Code) != tc.code || status.Reason != tc.reason || status.Message != tc.want {
				t.Errorf("%s%s: %d %d %q %q, want %d %q %q", tc.path, rv, w.Code, status.Code, status.Reason, status.Message, tc.code, tc.reason, tc.want)
			}
		}
	}
}

// A request body over kube-apiserver's default --max-request-body-bytes (3 MiB) is 413 in
// its handlers' words.
func TestRequestBodyTooLarge(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	big := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"},
		"data": map[string]any{"x": strings.Repeat("x", 3<<20)}}
	for _, tc := range []struct{ method, path string }{
		{"POST", "/api/v1/namespaces/default/configmaps"},
		{"PUT", "/api/v1/namespaces/default/configmaps/c"},
	} {
		w := do(t, h, tc.method, tc.path, big)
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		const want = "Request entity too large: limit is 3145728"
		if w.Code != http.StatusRequestEntityTooLarge || status.Reason != metav1.StatusReasonRequestEntityTooLarge || status.Message != want {
			t.Errorf("%s of a 3 MiB ConfigMap: %d %s %q, want 413 RequestEntityTooLarge %q", tc.method, w.Code, status.Reason, status.Message, want)
		}
	}
}
