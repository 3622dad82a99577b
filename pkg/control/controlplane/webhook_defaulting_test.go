package controlplane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// jsonPatchReview is a mutating webhook that admits every object with the JSON patch that
// patch gives for it.
func jsonPatchReview(patch func(obj *unstructured.Unstructured) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var ar admissionv1.AdmissionReview
		obj := &unstructured.Unstructured{}
		if err := json.NewDecoder(r.Body).Decode(&ar); err != nil || ar.Request == nil || obj.UnmarshalJSON(ar.Request.Object.Raw) != nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		ar.Response = &admissionv1.AdmissionResponse{UID: ar.Request.UID, Allowed: true, Patch: []byte(patch(obj)), PatchType: &pt}
		ar.Request = nil
		_ = json.NewEncoder(w).Encode(ar)
	}
}

// annotateSeen is the JSON patch operation that sets the annotation seen to value.
func annotateSeen(obj *unstructured.Unstructured, value string) string {
	v, _ := json.Marshal(value)
	if obj.GetAnnotations() == nil {
		return fmt.Sprintf(`{"op":"add","path":"/metadata/annotations","value":{"seen":%s}}`, v)
	}
	return fmt.Sprintf(`{"op":"add","path":"/metadata/annotations/seen","value":%s}`, v)
}

// serveWebhooks serves mux over HTTPS on loopback.
func serveWebhooks(t *testing.T, mux *http.ServeMux) *webhookServer {
	t.Helper()
	l, certPEM := loopbackTLSListener(t)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &webhookServer{url: "https://" + l.Addr().String(), caBundle: base64.StdEncoding.EncodeToString(certPEM)}
}

// startDefaultingWebhooks serves two mutating webhooks: /add adds a container named
// sidecar to a pod and an empty spec.extra to a widget; /observe annotates the object with
// what it was sent of them (seen: the sidecar's imagePullPolicy and terminationMessagePath,
// or the widget's spec.extra.mode).
func startDefaultingWebhooks(t *testing.T) *webhookServer {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/add", jsonPatchReview(func(obj *unstructured.Unstructured) string {
		if obj.GetKind() == "Pod" {
			return `[{"op":"add","path":"/spec/containers/-","value":{"name":"sidecar","image":"localhost/minik8s/netexec:v1"}}]`
		}
		return `[{"op":"add","path":"/spec/extra","value":{}}]`
	}))
	mux.Handle("/observe", jsonPatchReview(func(obj *unstructured.Unstructured) string {
		var seen string
		if obj.GetKind() == "Pod" {
			var pod corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pod); err == nil {
				for _, c := range pod.Spec.Containers {
					if c.Name == "sidecar" {
						seen = fmt.Sprintf("%s %s", c.ImagePullPolicy, c.TerminationMessagePath)
					}
				}
			}
		} else {
			seen, _, _ = unstructured.NestedString(obj.Object, "spec", "extra", "mode")
		}
		return "[" + annotateSeen(obj, seen) + "]"
	}))
	return serveWebhooks(t, mux)
}

// TestAdmissionWebhookSeesDefaults: what a mutating webhook adds is defaulted before the
// next webhook is called, as kube-apiserver's admission defaults each webhook's result: a
// container added to a pod has its imagePullPolicy and terminationMessagePath, a field
// added to a custom resource its schema's default. Before, the second webhook saw them
// unset (miniapi defaulted only once every webhook had been called).
func TestAdmissionWebhookSeesDefaults(t *testing.T) {
	c := startCluster(t)
	hook := startDefaultingWebhooks(t)
	ctx := context.Background()
	c.applyCRD(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.defaults.example.com}
spec:
  group: defaults.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
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
              extra: {type: object, properties: {mode: {type: string, default: fast}}}
`, "widgets.defaults.example.com")
	rules := `{operations: [CREATE], apiGroups: ["", defaults.example.com], apiVersions: [v1], resources: [pods, widgets]}`
	c.mustKubectl(t, webhookConfiguration("MutatingWebhookConfiguration", "add-then-observe",
		hook.webhook("add.defaults.example.com", "/add", rules),
		hook.webhook("observe.defaults.example.com", "/observe", rules)), "apply", "-f", "-")

	i := 0
	var pod *corev1.Pod
	waitFor(t, "the webhooks to see a new pod", func() bool {
		i++
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "localhost/minik8s/netexec:v1"}}}}
		var err error
		if pod, err = c.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
		_, seen := pod.Annotations["seen"]
		return seen
	})
	if got, want := pod.Annotations["seen"], "IfNotPresent /dev/termination-log"; got != want {
		t.Errorf("the second webhook saw the added container with %q, want its defaults %q", got, want)
	}

	widgets := customResources(c.adminConfig(t), "defaults.example.com", "v1", "widgets")
	var widget *unstructured.Unstructured
	waitFor(t, "the webhooks to see a new widget", func() bool {
		i++
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "defaults.example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w%d", i)}, "spec": map[string]any{}}}
		var err error
		if widget, err = widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Logf("create widget: %v", err)
			return false
		}
		_, seen := widget.GetAnnotations()["seen"]
		return seen
	})
	if got := widget.GetAnnotations()["seen"]; got != "fast" {
		t.Errorf("the second webhook saw the added spec.extra.mode as %q, want the schema's default \"fast\"", got)
	}
}
