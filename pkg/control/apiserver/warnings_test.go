package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Warning markers: what minik8s does not do (an NFS volume), one of kube's pod template
// warnings (a duplicate host alias) and kube's warning on a workload's name (a dot).
const (
	warnMinik8s = `is of a type minilet does not mount`
	warnKube    = `duplicate ip`
	warnName    = `metadata.name: this is used in`
)

// podSpecJSON asks for both an NFS volume and a duplicate host alias.
const podSpecJSON = `{"restartPolicy":"Never","volumes":[{"name":"data","nfs":{"server":"nfs.example","path":"/"}}],
 "hostAliases":[{"ip":"10.0.0.1","hostnames":["a"]},{"ip":"10.0.0.1","hostnames":["b"]}],
 "containers":[{"name":"c","image":"img"}]}`

const templateJSON = `{"metadata":{"labels":{"app":"a"}},"spec":` + podSpecJSON + `}`

// warningsOf is the set of markers among a response's Warning headers.
func warningsOf(w *http.Response) (markers []string) {
	all := strings.Join(w.Header.Values("Warning"), "\n")
	for _, m := range []string{warnMinik8s, warnKube, warnName} {
		if strings.Contains(all, m) {
			markers = append(markers, m)
		}
	}
	return markers
}

// Writes warn as kube-apiserver's strategies do (WarningsOnCreate, then WarningsOnUpdate):
// a create warns of the name and of the pod template; an update that changes only labels
// repeats nothing; one that changes the spec (a new generation) warns of the template again
// but not of the name (a Pod: of nothing kube warns of; a ReplicationController: of its old
// template, as kube's swapped arguments do). minik8s's own warnings follow the spec.
func TestWarningsOnUpdateFollowTheGeneration(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	for _, tc := range []struct {
		path, name, body string
		specPatch        string
		wantCreate       []string
		wantSpec         []string
	}{
		{"/apis/apps/v1/namespaces/default/deployments", "web.v1",
			`{"spec":{"selector":{"matchLabels":{"app":"a"}},"template":` + strings.Replace(templateJSON, `"Never"`, `"Always"`, 1) + `}}`,
			`{"spec":{"template":{"metadata":{"annotations":{"x":"1"}}}}}`,
			[]string{warnMinik8s, warnKube, warnName}, []string{warnMinik8s, warnKube}},
		{"/apis/apps/v1/namespaces/default/replicasets", "web.v1",
			`{"spec":{"selector":{"matchLabels":{"app":"a"}},"template":` + strings.Replace(templateJSON, `"Never"`, `"Always"`, 1) + `}}`,
			`{"spec":{"replicas":3}}`,
			[]string{warnMinik8s, warnKube, warnName}, []string{warnMinik8s, warnKube}},
		{"/apis/apps/v1/namespaces/default/statefulsets", "web",
			`{"spec":{"selector":{"matchLabels":{"app":"a"}},"template":` + strings.Replace(templateJSON, `"Never"`, `"Always"`, 1) + `}}`,
			`{"spec":{"replicas":3}}`,
			[]string{warnMinik8s, warnKube}, []string{warnMinik8s, warnKube}},
		// A DaemonSet warns again when its template changes, not the rest of its spec.
		{"/apis/apps/v1/namespaces/default/daemonsets", "web",
			`{"spec":{"selector":{"matchLabels":{"app":"a"}},"template":` + strings.Replace(templateJSON, `"Never"`, `"Always"`, 1) + `}}`,
			`{"spec":{"template":{"metadata":{"annotations":{"x":"1"}}}}}`,
			[]string{warnMinik8s, warnKube}, []string{warnMinik8s, warnKube}},
		{"/apis/batch/v1/namespaces/default/jobs", "web.v1",
			`{"spec":{"template":` + templateJSON + `}}`,
			`{"spec":{"parallelism":2}}`,
			[]string{warnMinik8s, warnKube, warnName}, []string{warnMinik8s, warnKube}},
		{"/apis/batch/v1/namespaces/default/cronjobs", "web.v1",
			`{"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":` + templateJSON + `}}}}`,
			`{"spec":{"schedule":"*/5 * * * *"}}`,
			[]string{warnMinik8s, warnKube, warnName}, []string{warnMinik8s, warnKube}},
		{"/api/v1/namespaces/default/podtemplates", "web",
			`{"template":` + templateJSON + `}`,
			`{"template":{"metadata":{"annotations":{"x":"1"}}}}`,
			[]string{warnMinik8s, warnKube}, []string{warnMinik8s, warnKube}},
		// The pod's image changes; kube warns of nothing on a pod's update.
		{"/api/v1/namespaces/default/pods", "web.v1",
			`{"spec":` + podSpecJSON + `}`,
			`{"spec":{"containers":[{"name":"c","image":"img2"}]}}`,
			[]string{warnMinik8s, warnKube, warnName}, []string{warnMinik8s}},
		// The new template drops its duplicate host alias: kube warns of the old one's.
		{"/api/v1/namespaces/default/replicationcontrollers", "web.v1",
			`{"spec":{"selector":{"app":"a"},"template":` + strings.Replace(templateJSON, `"Never"`, `"Always"`, 1) + `}}`,
			`{"spec":{"template":{"spec":{"hostAliases":null}}}}`,
			[]string{warnMinik8s, warnKube, warnName}, []string{warnMinik8s, warnKube}},
	} {
		t.Run(tc.path[strings.LastIndex(tc.path, "/")+1:], func(t *testing.T) {
			var body map[string]any
			if err := json.Unmarshal([]byte(tc.body), &body); err != nil {
				t.Fatal(err)
			}
			body["metadata"] = map[string]any{"name": tc.name}
			w := do(t, h, "POST", tc.path, body)
			if w.Code != http.StatusCreated {
				t.Fatalf("create: %d %s", w.Code, w.Body)
			}
			// Every kind here has a generation (a PodTemplate's counts its template's changes).
			check := func(what string, w *httptest.ResponseRecorder, want []string, generation int64) {
				t.Helper()
				if got := warningsOf(w.Result()); strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("%s warned of %q, want %q", what, got, want)
				}
				var obj struct{ Metadata metav1.ObjectMeta }
				if err := json.Unmarshal(w.Body.Bytes(), &obj); err != nil || obj.Metadata.Generation != generation {
					t.Errorf("%s: generation %d (%v), want %d", what, obj.Metadata.Generation, err, generation)
				}
			}
			check("create", w, tc.wantCreate, 1)
			obj := tc.path + "/" + tc.name
			w = strategicPatch(t, h, obj, `{"metadata":{"labels":{"x":"y"}}}`)
			if w.Code != http.StatusOK {
				t.Fatalf("patch labels: %d %s", w.Code, w.Body)
			}
			check("patch labels", w, nil, 1)
			w = strategicPatch(t, h, obj, tc.specPatch)
			if w.Code != http.StatusOK {
				t.Fatalf("patch %s: %d %s", tc.specPatch, w.Code, w.Body)
			}
			check("patch "+tc.specPatch, w, tc.wantSpec, 2)
		})
	}
}

// A Deployment's scale is written by its strategy in kube-apiserver, so it warns as an
// update of the Deployment does: of the template when spec.replicas changes (a new
// generation), of nothing when it stays.
func TestScaleWarnsAsItsParent(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const path = "/apis/apps/v1/namespaces/default/deployments"
	var body map[string]any
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"web.v1"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"a"}},"template":`+
		strings.Replace(templateJSON, `"Never"`, `"Always"`, 1)+`}}`), &body); err != nil {
		t.Fatal(err)
	}
	if w := do(t, h, "POST", path, body); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	scale := path + "/web.v1/scale"
	for _, tc := range []struct {
		name string
		send func() *httptest.ResponseRecorder
		want []string
	}{
		{"patch to the same count", func() *httptest.ResponseRecorder {
			return patchAs(h, "application/merge-patch+json", scale, `{"spec":{"replicas":1}}`)
		}, nil},
		{"patch to 3", func() *httptest.ResponseRecorder {
			return patchAs(h, "application/merge-patch+json", scale, `{"spec":{"replicas":3}}`)
		}, []string{warnMinik8s, warnKube}},
		{"put of 3 again", func() *httptest.ResponseRecorder {
			return do(t, h, "PUT", scale, map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
				"metadata": map[string]any{"name": "web.v1", "namespace": "default"}, "spec": map[string]any{"replicas": 3}})
		}, nil},
		{"put of 2", func() *httptest.ResponseRecorder {
			return do(t, h, "PUT", scale, map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
				"metadata": map[string]any{"name": "web.v1", "namespace": "default"}, "spec": map[string]any{"replicas": 2}})
		}, []string{warnMinik8s, warnKube}},
		// The status is the controller's: nothing to warn its writer of.
		{"status", func() *httptest.ResponseRecorder {
			return patchAs(h, "application/merge-patch+json", path+"/web.v1/status", `{"status":{"replicas":2}}`)
		}, nil},
	} {
		w := tc.send()
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.name, w.Code, w.Body)
		}
		if got := warningsOf(w.Result()); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s warned of %q, want %q", tc.name, got, tc.want)
		}
	}
	// A field Scale does not have is warned of under Warn, as in any decoded body.
	w := do(t, h, "PUT", scale+"?fieldValidation=Warn", map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": "web.v1", "namespace": "default"}, "spec": map[string]any{"replicas": 2, "bogus": 1}})
	if got := w.Header().Values("Warning"); w.Code != http.StatusOK || len(got) != 1 || !strings.Contains(got[0], `unknown field \"spec.bogus\"`) {
		t.Errorf("put with an unknown field: %d with warnings %q, want 200 and the unknown field's warning", w.Code, got)
	}
}

// Warnings come with a refusal as kube-apiserver sends them: a decoding warning (an unknown
// field under Warn) with any answer after the decoding; the kind's warnings once the object
// is valid, so with a taken name's 409 but not with a 422; one retried write warns once.
func TestWarningsWithRefusals(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const (
		path     = "/api/v1/namespaces/default/services"
		external = "spec.externalIPs is deprecated"
		unknown  = `unknown field \"spec.bogus\"`
	)
	svc := json.RawMessage(`{"metadata":{"name":"ext"},"spec":{"externalIPs":["1.2.3.4"],"ports":[{"port":80}]}}`)
	headers := func(w *httptest.ResponseRecorder) string { return strings.Join(w.Header().Values("Warning"), "\n") }
	for i, wantCode := range []int{http.StatusCreated, http.StatusConflict} {
		w := do(t, h, "POST", path, svc)
		if got := headers(w); w.Code != wantCode || strings.Count(got, external) != 1 {
			t.Errorf("create %d: %d with warnings %q, want %d and the externalIPs warning once", i+1, w.Code, got, wantCode)
		}
	}
	invalid := json.RawMessage(`{"metadata":{"name":"bad"},"spec":{"bogus":1,"sessionAffinity":"Bad","externalIPs":["1.2.3.4"],"ports":[{"port":80}]}}`)
	w := do(t, h, "POST", path+"?fieldValidation=Warn", invalid)
	if got := headers(w); w.Code != http.StatusUnprocessableEntity || !strings.Contains(got, unknown) || strings.Contains(got, external) {
		t.Errorf("invalid create: %d with warnings %q, want 422 with the unknown field's warning only", w.Code, got)
	}
}
