package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Apply requests that kube-apiserver refuses, refused with its status, reason and message:
// the kind and unknown-field checks are its field manager's (apimachinery's
// managedfields: versionCheckManager, structuredMergeManager.Apply, which gives a plain
// error, so a 500), the strict decoding's (duplicate fields) come after the field
// manager's, conflicts too (patch.go: applyPatcher), the name and uid checks its patch handler's
// (apiserver/pkg/endpoints/handlers/patch.go: applyYAML, checkName), force on another
// patch type its ValidatePatchOptions.
func TestApplyErrorsAsKubeAPIServer(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const cms = "/api/v1/namespaces/default/configmaps/"
	if w := patchAs(h, applyYAML, cms+"cfg?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {x: \"1\"}\n"); w.Code != http.StatusCreated {
		t.Fatalf("apply creating cfg: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct {
		name, contentType, path, patch string
		code                           int32
		reason                         metav1.StatusReason
		message                        string
	}{
		{"another kind", applyYAML, cms + "cfg?fieldManager=a", "apiVersion: v1\nkind: Secret\nmetadata: {name: cfg}\n",
			400, metav1.StatusReasonBadRequest, "invalid object type: /v1, Kind=Secret"},
		{"another version", applyYAML, cms + "cfg?fieldManager=a", "apiVersion: v2\nkind: ConfigMap\nmetadata: {name: cfg}\n",
			400, metav1.StatusReasonBadRequest, "invalid object type: /v2, Kind=ConfigMap"},
		{"no kind", applyYAML, cms + "cfg?fieldManager=a", "metadata: {name: cfg}\n",
			400, metav1.StatusReasonBadRequest, "invalid object type: /, Kind="},
		{"an unknown field", applyYAML, cms + "cfg?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: default}\nfoo: 1\n",
			400, metav1.StatusReasonBadRequest, "failed to create typed patch object (default/cfg; /v1, Kind=ConfigMap): .foo: field not declared in schema"},
		{"an unknown field, unvalidated", applyYAML, cms + "cfg?fieldManager=a&fieldValidation=Ignore", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {x: 1}\n",
			400, metav1.StatusReasonBadRequest, "failed to create typed patch object (/cfg; /v1, Kind=ConfigMap): .data.x: expected string, got &value.valueUnstructured{Value:1}"},
		{"another name", applyYAML, cms + "cfg?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
			400, metav1.StatusReasonBadRequest, "the name of the object (other) does not match the name on the URL (cfg)"},
		{"no name, creating", applyYAML, cms + "nameless?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\ndata: {x: \"1\"}\n",
			400, metav1.StatusReasonBadRequest, "the name of the object (nameless based on URL) was undeterminable: name must be provided"},
		{"a merge patch removing the name", "application/merge-patch+json", cms + "cfg", `{"metadata":{"name":null}}`,
			400, metav1.StatusReasonBadRequest, "the name of the object (cfg based on URL) was undeterminable: name must be provided"},
		{"a strategic merge patch replacing the object by one without a name", "application/strategic-merge-patch+json", cms + "cfg", `{"$patch":"replace","data":{}}`,
			400, metav1.StatusReasonBadRequest, "the name of the object (cfg based on URL) was undeterminable: name must be provided"},
		{"a uid, creating", applyYAML, cms + "new?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new, uid: abc}\n",
			409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on configmaps "new": uid mismatch: the provided object specified uid abc, and no existing object was found`},
		{"a conflict and a duplicate field", applyYAML, cms + "cfg?fieldManager=b&fieldValidation=Strict", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {x: \"2\", x: \"2\"}\n",
			409, metav1.StatusReasonConflict, `Apply failed with 1 conflict: conflict with "a": .data.x`},
		{"a duplicate field", applyYAML, cms + "cfg?fieldManager=a&fieldValidation=Strict", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {x: \"2\", x: \"2\"}\n",
			400, metav1.StatusReasonBadRequest, "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 4: key \"x\" already set in map"},
		{"force on a merge patch", "application/merge-patch+json", cms + "cfg?force=true", `{}`,
			422, metav1.StatusReasonInvalid, `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := patchAs(h, tc.contentType, tc.path, tc.patch)
			st := apitest.ResponseStatus(t, w.Body.Bytes())
			if int32(w.Code) != tc.code || st.Code != tc.code || st.Reason != tc.reason || st.Message != tc.message {
				t.Errorf("got %d %s %q\nwant %d %s %q", st.Code, st.Reason, st.Message, tc.code, tc.reason, tc.message)
			}
		})
	}
}

// An apply's duplicate YAML keys under Warn are one Warning per key, the lines of the YAML
// error without its prefix, as kube-apiserver gives them (handlers/patch.go: applyPatcher
// then addStrictDecodingWarnings, handlers/rest.go: parseYAMLWarnings).
func TestApplyDuplicateFieldWarnings(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	w := patchAs(h, applyYAML, "/api/v1/namespaces/default/configmaps/cfg?fieldManager=a&fieldValidation=Warn",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata:\n  x: \"1\"\n  x: \"2\"\n  z: \"1\"\n  z: \"2\"\n")
	want := []string{`299 - "line 6: key \"x\" already set in map"`, `299 - "line 8: key \"z\" already set in map"`}
	if got := w.Header().Values("Warning"); w.Code != http.StatusCreated || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %d, warnings %q\nwant 201, warnings %q", w.Code, got, want)
	}
}

const applyYAML = "application/apply-patch+yaml"

func patchAs(h http.Handler, contentType, path, patch string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("PATCH", path, strings.NewReader(patch))
	req.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// managedFields [{}] in a patch or an update clears them (apimachinery's managedfields:
// isResetManagedFields; an update of an object managed by nobody records nothing,
// skipNonAppliedManager), instead of failing validation on the empty entry.
func TestManagedFieldsResetByOneEmptyEntry(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const cfg = "/api/v1/namespaces/default/configmaps/cfg"
	if w := patchAs(h, applyYAML, cfg+"?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {x: \"1\"}\n"); w.Code != http.StatusCreated {
		t.Fatalf("apply creating cfg: %d %s", w.Code, w.Body)
	}
	w := patchAs(h, "application/merge-patch+json", cfg+"?fieldManager=b", `{"metadata":{"managedFields":[{}]}}`)
	var cm corev1.ConfigMap
	if err := json.Unmarshal(w.Body.Bytes(), &cm); w.Code != http.StatusOK || err != nil || len(cm.ManagedFields) != 0 {
		t.Fatalf("patch resetting managedFields: %d %s", w.Code, w.Body)
	}

	w = patchAs(h, applyYAML, cfg+"?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {x: \"1\"}\n")
	// An apply to an object managed by nobody first gives what is there to before-first-apply.
	if err := json.Unmarshal(w.Body.Bytes(), &cm); err != nil || len(cm.ManagedFields) != 2 || cm.ManagedFields[1].Manager != "before-first-apply" {
		t.Fatalf("apply after the reset: %d %s", w.Code, w.Body)
	}
	cm.ManagedFields = []metav1.ManagedFieldsEntry{{}}
	cm.Data["y"] = "2"
	w = do(t, h, "PUT", cfg+"?fieldManager=c", &cm)
	cm = corev1.ConfigMap{}
	if err := json.Unmarshal(w.Body.Bytes(), &cm); w.Code != http.StatusOK || err != nil || len(cm.ManagedFields) != 0 || cm.Data["y"] != "2" {
		t.Fatalf("update resetting managedFields: %d %s", w.Code, w.Body)
	}
}

// A write through the scale subresource owns spec.replicas as an Update with subresource
// scale, taking it from the applier, whose next apply of other replicas conflicts, as in
// kube-apiserver (apimachinery's managedfields.ScaleHandler; `kubectl scale` after
// `kubectl apply --server-side`).
func TestScaleOwnsReplicas(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const web = "/apis/apps/v1/namespaces/default/deployments/web"
	deploy := func(replicas string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: " + replicas +
			"\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: busybox}]}\n"
	}
	if w := patchAs(h, applyYAML, web+"?fieldManager=kubectl", deploy("1")); w.Code != http.StatusCreated {
		t.Fatalf("apply creating web: %d %s", w.Code, w.Body)
	}
	if w := patchAs(h, "application/merge-patch+json", web+"/scale?fieldManager=scaler", `{"spec":{"replicas":3}}`); w.Code != http.StatusOK {
		t.Fatalf("scaling web: %d %s", w.Code, w.Body)
	}
	var d appsv1.Deployment
	if err := json.Unmarshal(do(t, h, "GET", web, nil).Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	scaler := apitest.ManagerEntry(&d, "scaler")
	if scaler == nil || scaler.Operation != metav1.ManagedFieldsOperationUpdate || scaler.Subresource != "scale" || scaler.APIVersion != "apps/v1" ||
		string(scaler.FieldsV1.Raw) != `{"f:spec":{"f:replicas":{}}}` {
		t.Errorf("the scaler should own spec.replicas through scale: %+v", d.ManagedFields)
	}
	if applier := apitest.ManagerEntry(&d, "kubectl"); applier == nil || strings.Contains(string(applier.FieldsV1.Raw), "f:replicas") {
		t.Errorf("the applier should have lost spec.replicas: %+v", d.ManagedFields)
	}

	w := patchAs(h, applyYAML, web+"?fieldManager=kubectl", deploy("1"))
	st := apitest.ResponseStatus(t, w.Body.Bytes())
	if want := `Apply failed with 1 conflict: conflict with "scaler" with subresource "scale" using apps/v1: .spec.replicas`; w.Code != http.StatusConflict || st.Message != want {
		t.Errorf("apply of other replicas: %d %q\nwant 409 %q", w.Code, st.Message, want)
	}
}

// Server-side apply through the scale subresource, as kube-apiserver serves it (its patch
// handler's applyPatcher on the Scale, whose managed fields the ScaleHandler maps onto the
// parent's spec.replicas): it conflicts with the parent's applier, takes spec.replicas when
// forced, and the parent's next apply of other replicas conflicts with it in turn.
func TestApplyThroughScale(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const web = "/apis/apps/v1/namespaces/default/deployments/web"
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n" +
		"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: busybox}]}\n"
	const scale = "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: web}\nspec: {replicas: 3}\n"
	if w := patchAs(h, applyYAML, web+"?fieldManager=kubectl", deploy); w.Code != http.StatusCreated {
		t.Fatalf("apply creating web: %d %s", w.Code, w.Body)
	}
	w := patchAs(h, applyYAML, web+"/scale?fieldManager=hpa", scale)
	if want := `Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas`; w.Code != http.StatusConflict || apitest.ResponseStatus(t, w.Body.Bytes()).Message != want {
		t.Errorf("unforced apply to scale: %d %s\nwant 409 %q", w.Code, w.Body, want)
	}
	w = patchAs(h, applyYAML, web+"/scale?fieldManager=hpa&force=true", scale)
	var sc autoscalingv1.Scale
	if err := json.Unmarshal(w.Body.Bytes(), &sc); w.Code != http.StatusOK || err != nil || sc.Kind != "Scale" || sc.Spec.Replicas != 3 {
		t.Fatalf("forced apply to scale: %d %s", w.Code, w.Body)
	}
	var d appsv1.Deployment
	if err := json.Unmarshal(do(t, h, "GET", web, nil).Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	hpa := apitest.ManagerEntry(&d, "hpa")
	if *d.Spec.Replicas != 3 || hpa == nil || hpa.Operation != metav1.ManagedFieldsOperationApply || hpa.Subresource != "scale" ||
		hpa.APIVersion != "apps/v1" || string(hpa.FieldsV1.Raw) != `{"f:spec":{"f:replicas":{}}}` {
		t.Errorf("the scale's applier should own spec.replicas: replicas %d, %+v", *d.Spec.Replicas, d.ManagedFields)
	}
	if applier := apitest.ManagerEntry(&d, "kubectl"); applier == nil || strings.Contains(string(applier.FieldsV1.Raw), "f:replicas") {
		t.Errorf("the parent's applier should have lost spec.replicas: %+v", d.ManagedFields)
	}

	w = patchAs(h, applyYAML, web+"?fieldManager=kubectl", deploy)
	if want := `Apply failed with 1 conflict: conflict with "hpa" with subresource "scale": .spec.replicas`; w.Code != http.StatusConflict || apitest.ResponseStatus(t, w.Body.Bytes()).Message != want {
		t.Errorf("apply of other replicas: %d %s\nwant 409 %q", w.Code, w.Body, want)
	}
	if w := patchAs(h, applyYAML, web+"/scale", scale); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("apply to scale without a field manager: %d %s", w.Code, w.Body)
	}
	if w := patchAs(h, applyYAML, web+"/scale?fieldManager=hpa", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"); w.Code != http.StatusBadRequest {
		t.Errorf("apply of another kind to scale: %d %s", w.Code, w.Body)
	}
}

// An update's managed fields are the request's, recorded before mutating admission and the
// kind's strategy, as kube-apiserver's update and patch handlers record them (handlers/
// update.go, patch.go: the field manager is the first of the updated object's transformers,
// before the store's BeginUpdate and PrepareForUpdate). A patch clearing a Service's cluster
// IP, which the Service's update puts back, takes the field from its creator (a new
// resourceVersion: "patched", not "patched (no change)"); a Service turned ExternalName,
// whose internalTrafficPolicy the strategy drops, leaves that field with its creator.
func TestManagedFieldsRecordTheRequestNotTheStrategy(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const svcs = "/api/v1/namespaces/default/services"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.50.50",
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	w := do(t, h, "POST", svcs+"?fieldManager=creator", svc)
	if w.Code != http.StatusCreated {
		t.Fatalf("creating the Service: %d %s", w.Code, w.Body)
	}
	created := decodeService(t, w)
	if fields := managedBy(created, "creator"); !strings.Contains(fields, `"f:clusterIP"`) {
		t.Fatalf("the creator's fields %s, want f:clusterIP", fields)
	}

	w = patchAs(h, "application/strategic-merge-patch+json", svcs+"/web?fieldManager=patcher", `{"spec":{"clusterIP":""}}`)
	patched := decodeService(t, w)
	if w.Code != http.StatusOK || patched.Spec.ClusterIP != "10.96.50.50" || patched.ResourceVersion == created.ResourceVersion {
		t.Fatalf("patch clearing clusterIP: %d, clusterIP %q, resourceVersion %s (was %s)",
			w.Code, patched.Spec.ClusterIP, patched.ResourceVersion, created.ResourceVersion)
	}
	if fields := managedBy(patched, "creator"); strings.Contains(fields, `"f:clusterIP"`) || !strings.Contains(fields, `"f:selector"`) {
		t.Errorf("the creator's fields after the patch %s, want f:selector and no f:clusterIP", fields)
	}

	w = patchAs(h, "application/merge-patch+json", svcs+"/web?fieldManager=patcher",
		`{"spec":{"type":"ExternalName","externalName":"web.invalid","clusterIP":"","clusterIPs":null,"selector":null,"ports":null}}`)
	external := decodeService(t, w)
	if w.Code != http.StatusOK || external.Spec.InternalTrafficPolicy != nil {
		t.Fatalf("patch to ExternalName: %d, internalTrafficPolicy %v", w.Code, external.Spec.InternalTrafficPolicy)
	}
	if fields := managedBy(external, "creator"); !strings.Contains(fields, `"f:internalTrafficPolicy"`) {
		t.Errorf("the creator's fields %s, want f:internalTrafficPolicy", fields)
	}
}

func decodeService(t *testing.T, w *httptest.ResponseRecorder) *corev1.Service {
	t.Helper()
	var svc corev1.Service
	if err := json.Unmarshal(w.Body.Bytes(), &svc); err != nil {
		t.Fatalf("decoding %s: %v", w.Body, err)
	}
	return &svc
}

// managedBy is the fields of manager's Update entry, empty if it has none.
func managedBy(obj metav1.Object, manager string) string {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationUpdate && e.FieldsV1 != nil {
			return string(e.FieldsV1.Raw)
		}
	}
	return ""
}

// A namespace's finalize is tracked as kube-apiserver tracks it: the writer owns what it
// changed, with subresource finalize, and a body without managed fields (as kubectl get
// prints it) keeps the others' entries.
func TestFinalizeIsTracked(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	w := do(t, h, "POST", "/api/v1/namespaces?fieldManager=creator", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going"}})
	if w.Code != http.StatusCreated {
		t.Fatalf("creating the namespace: %d %s", w.Code, w.Body)
	}
	var ns corev1.Namespace
	if err := json.Unmarshal(w.Body.Bytes(), &ns); err != nil {
		t.Fatal(err)
	}
	ns.ManagedFields = nil
	ns.Labels["extra"] = "yes"
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, "example.com/hold")
	w = do(t, h, "PUT", "/api/v1/namespaces/going/finalize?fieldManager=finalizer", &ns)
	if w.Code != http.StatusOK {
		t.Fatalf("finalize: %d %s", w.Code, w.Body)
	}
	var got corev1.Namespace
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if fields := managedBy(&got, "creator"); !strings.Contains(fields, `"f:kubernetes.io/metadata.name"`) {
		t.Errorf("the creator's fields after finalize %q, want its label's", fields)
	}
	var entry *metav1.ManagedFieldsEntry
	for i, e := range got.ManagedFields {
		if e.Manager == "finalizer" {
			entry = &got.ManagedFields[i]
		}
	}
	if entry == nil || entry.Subresource != "finalize" || entry.FieldsV1 == nil ||
		string(entry.FieldsV1.Raw) != `{"f:metadata":{"f:labels":{"f:extra":{}}},"f:spec":{"f:finalizers":{}}}` {
		t.Errorf("the finalizer's entry %+v, want subresource finalize owning the label and spec.finalizers", entry)
	}
}

// A pod's resize and ephemeralcontainers writes are tracked as kube-apiserver tracks them:
// an Update entry with the subresource's name owning only what it may change (the
// entries below are kube-apiserver v1.36.3's for these patches).
func TestPodSubresourcesAreTracked(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const pods = "/api/v1/namespaces/default/pods"
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rp"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "registry.invalid/app:1", Resources: corev1.ResourceRequirements{Requests: cpu, Limits: cpu}}}}}
	if w := do(t, h, "POST", pods+"?fieldManager=creator", pod); w.Code != http.StatusCreated {
		t.Fatalf("creating the pod: %d %s", w.Code, w.Body)
	}
	for _, c := range []struct{ sub, patch, want string }{
		{"resize", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}`,
			`{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{"f:resources":{"f:limits":{"f:cpu":{}},"f:requests":{"f:cpu":{}}}}}}}`},
		{"ephemeralcontainers", `{"spec":{"ephemeralContainers":[{"name":"dbg","image":"registry.invalid/dbg:1","targetContainerName":"c"}]}}`,
			`{"f:spec":{"f:ephemeralContainers":{".":{},"k:{\"name\":\"dbg\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:targetContainerName":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}}}}`},
	} {
		w := patchAs(h, "application/strategic-merge-patch+json", pods+"/rp/"+c.sub+"?fieldManager="+c.sub+"-writer", c.patch)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", c.sub, w.Code, w.Body)
		}
		var got corev1.Pod
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		var entry *metav1.ManagedFieldsEntry
		for i, e := range got.ManagedFields {
			if e.Manager == c.sub+"-writer" {
				entry = &got.ManagedFields[i]
			}
		}
		if entry == nil || entry.Subresource != c.sub || entry.FieldsV1 == nil || string(entry.FieldsV1.Raw) != c.want {
			t.Errorf("%s: the writer's entry %+v, want subresource %s owning %s", c.sub, entry, c.sub, c.want)
		}
		if fields := managedBy(&got, "creator"); !strings.Contains(fields, `"f:image"`) {
			t.Errorf("%s: the creator's fields %q, want its container's image still", c.sub, fields)
		}
	}
}

// A CSR's managed fields are kube-apiserver's: its writers own neither spec nor status, so
// one created without labels has none and its approval records nothing (an object managed
// by nobody stays so); with a label, the approver owns its Approved condition, with
// subresource approval.
func TestCSRManagedFieldsAsKube(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u1"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	const csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	approve := func(name string) *certificatesv1.CertificateSigningRequest {
		t.Helper()
		w := do(t, h, "GET", csrs+"/"+name, nil)
		var csr certificatesv1.CertificateSigningRequest
		if err := json.Unmarshal(w.Body.Bytes(), &csr); err != nil {
			t.Fatalf("reading %s: %s", name, w.Body)
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlApprove"})
		if w = do(t, h, "PUT", csrs+"/"+name+"/approval?fieldManager=approver", &csr); w.Code != http.StatusOK {
			t.Fatalf("approving %s: %d %s", name, w.Code, w.Body)
		}
		if err := json.Unmarshal(w.Body.Bytes(), &csr); err != nil {
			t.Fatal(err)
		}
		return &csr
	}
	for _, labels := range []map[string]string{nil, {"a": "b"}} {
		name := "plain"
		if labels != nil {
			name = "labelled"
		}
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/signer",
				Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				Usages:  []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
		w := do(t, h, "POST", csrs+"?fieldManager=creator", csr)
		if w.Code != http.StatusCreated {
			t.Fatalf("creating %s: %d %s", name, w.Code, w.Body)
		}
		var created certificatesv1.CertificateSigningRequest
		if err := json.Unmarshal(w.Body.Bytes(), &created); err != nil {
			t.Fatal(err)
		}
		approved := approve(name)
		if labels == nil {
			if len(created.ManagedFields)+len(approved.ManagedFields) != 0 {
				t.Errorf("%s: managed fields %+v, then %+v after approval; want none", name, created.ManagedFields, approved.ManagedFields)
			}
			continue
		}
		if fields := managedBy(&created, "creator"); fields != `{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}` {
			t.Errorf("%s: the creator's fields %s, want its label's only", name, fields)
		}
		var entry *metav1.ManagedFieldsEntry
		for i, e := range approved.ManagedFields {
			if e.Manager == "approver" {
				entry = &approved.ManagedFields[i]
			}
		}
		if entry == nil || entry.Subresource != "approval" || entry.FieldsV1 == nil || !strings.Contains(string(entry.FieldsV1.Raw), `"k:{\"type\":\"Approved\"}"`) {
			t.Errorf("%s: the approver's entry %+v, want subresource approval owning the Approved condition", name, entry)
		}
	}
}

// An update whose object has no name is refused, not given the URL's name, as
// kube-apiserver's checkName does (handlers/rest.go), a Scale's too.
func TestNamelessUpdateRefused(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	if w := patchAs(h, applyYAML, "/api/v1/namespaces/default/configmaps/cfg?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n"); w.Code != http.StatusCreated {
		t.Fatalf("apply creating cfg: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct {
		path string
		body any
		want string
	}{
		{"/api/v1/namespaces/default/configmaps/cfg", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Data: map[string]string{"a": "b"}},
			"the name of the object (cfg based on URL) was undeterminable: name must be provided"},
		{"/apis/apps/v1/namespaces/default/deployments/web/scale", &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}},
			"the name of the object (web based on URL) was undeterminable: name must be provided"},
	} {
		w := do(t, h, "PUT", tc.path, tc.body)
		if st := apitest.ResponseStatus(t, w.Body.Bytes()); w.Code != http.StatusBadRequest || st.Message != tc.want {
			t.Errorf("PUT %s without a name: %d %q, want 400 %q", tc.path, w.Code, st.Message, tc.want)
		}
	}
}
