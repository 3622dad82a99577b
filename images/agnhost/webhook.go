package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webhookCommand is agnhost's `webhook`: an HTTPS admission webhook whose endpoints
// allow, deny and patch objects the way the AdmissionWebhook e2e tests
// (test/e2e/apimachinery/webhook.go) expect, with agnhost's messages and JSON patches.
func webhookCommand() *cobra.Command {
	var certFile, keyFile string
	var verbosity int
	port := 443
	w := &webhook{}
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Serves admission webhooks for the AdmissionWebhook e2e tests over HTTPS",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
			}
			level := slog.LevelInfo
			if verbosity >= 2 {
				level = slog.LevelDebug
			}
			w.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			server := &http.Server{
				Addr:      fmt.Sprintf(":%d", port),
				Handler:   w.routes(),
				TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
			}
			return server.ListenAndServeTLS("", "")
		},
	}
	f := cmd.Flags()
	f.StringVar(&certFile, "tls-cert-file", "", "x509 certificate for HTTPS (CA certificates, if any, after the server's)")
	f.StringVar(&keyFile, "tls-private-key-file", "", "x509 private key matching --tls-cert-file")
	f.IntVar(&port, "port", port, "HTTPS port")
	f.StringVar(&w.sidecarImage, "sidecar-image", "", "image of the sidecar /mutating-pods-sidecar adds")
	f.IntVarP(&verbosity, "v", "v", 0, "log verbosity (2 and above log every review)")
	return cmd
}

type webhook struct {
	sidecarImage string
	log          *slog.Logger
	// allowDelay is how long /always-allow-delay-5s waits; tests shorten it.
	allowDelay time.Duration
}

// admitFunc answers one admission request; nil means no answer (the request's context
// ended first).
type admitFunc func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

func (w *webhook) routes() *http.ServeMux {
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.allowDelay == 0 {
		w.allowDelay = 5 * time.Second
	}
	mux := http.NewServeMux()
	for path, admit := range map[string]admitFunc{
		"/always-allow-delay-5s":    w.alwaysAllowDelayed,
		"/always-deny":              alwaysDeny,
		"/add-label":                addLabel,
		"/pods":                     admitPod,
		"/pods/attach":              denyAttach,
		"/mutating-pods":            addInitContainer,
		"/mutating-pods-sidecar":    w.addSidecar,
		"/configmaps":               admitData(&configMapsResource, "the configmap contains unwanted key and value", "the configmap cannot be deleted because it contains unwanted key and value"),
		"/mutating-configmaps":      mutateData,
		"/custom-resource":          admitData(nil, "the custom resource contains unwanted data", "the custom resource cannot be deleted because it contains unwanted key and value"),
		"/mutating-custom-resource": mutateData,
		"/crd":                      admitCRD,
	} {
		mux.Handle(path, w.serve(admit))
	}
	mux.HandleFunc("/readyz", func(rw http.ResponseWriter, _ *http.Request) { rw.Write([]byte("ok")) })
	return mux
}

// serve decodes an AdmissionReview of admission.k8s.io/v1 or v1beta1 and answers in the
// same version. The two versions' JSON is the same field for field, so one Go type reads
// and writes both.
func (w *webhook) serve(admit admitFunc) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			http.Error(rw, fmt.Sprintf("Content-Type %q, want application/json", ct), http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.log.Debug("handling request", "path", r.URL.Path, "body", string(body))
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil {
			http.Error(rw, fmt.Sprintf("Request could not be decoded: %v", err), http.StatusBadRequest)
			return
		}
		gv := review.APIVersion
		if review.Kind != "AdmissionReview" || (gv != "admission.k8s.io/v1" && gv != "admission.k8s.io/v1beta1") || review.Request == nil {
			http.Error(rw, fmt.Sprintf("Unsupported group version kind: %s, Kind=%s (or no request)", gv, review.Kind), http.StatusBadRequest)
			return
		}
		response := admit(r.Context(), review.Request)
		if response == nil {
			return
		}
		response.UID = review.Request.UID
		out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: response})
		if err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		w.log.Debug("sending response", "path", r.URL.Path, "body", string(out))
		rw.Header().Set("Content-Type", "application/json")
		rw.Write(out)
	})
}

func allow() *admissionv1.AdmissionResponse { return &admissionv1.AdmissionResponse{Allowed: true} }

func deny(message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: message}}
}

// denyReason denies with the text in Result.Reason, where agnhost puts it for configmaps
// and custom resources (the API server shows either in its error).
func denyReason(reason string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{Reason: metav1.StatusReason(reason)}}
}

func jsonPatch(patch string) *admissionv1.AdmissionResponse {
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &pt}
}

func (w *webhook) alwaysAllowDelayed(ctx context.Context, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	select {
	case <-time.After(w.allowDelay):
	case <-ctx.Done():
		return nil
	}
	return &admissionv1.AdmissionResponse{Allowed: true, Result: &metav1.Status{Message: "this webhook allows all requests"}}
}

func alwaysDeny(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return deny("this webhook denies all requests")
}

// addLabel sets the label added-label=yes with the smallest JSON patch that does it.
func addLabel(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return deny(err.Error())
	}
	value, has := obj.Metadata.Labels["added-label"]
	switch {
	case len(obj.Metadata.Labels) == 0:
		return jsonPatch(`[{"op":"add","path":"/metadata/labels","value":{"added-label":"yes"}}]`)
	case !has:
		return jsonPatch(`[{"op":"add","path":"/metadata/labels/added-label","value":"yes"}]`)
	case value != "yes":
		return jsonPatch(`[{"op":"replace","path":"/metadata/labels/added-label","value":"yes"}]`)
	}
	return allow()
}

var (
	podsResource       = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapsResource = metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// decodeObject reads the request's object (the old one for a DELETE) after checking
// the resource is the one the endpoint is for (any, if want is nil).
func decodeObject(req *admissionv1.AdmissionRequest, want *metav1.GroupVersionResource, into any) error {
	if want != nil && req.Resource != *want {
		return fmt.Errorf("expect resource to be %s, got %s", want, req.Resource)
	}
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	return json.Unmarshal(raw, into)
}

// admitPod denies pods labelled webhook-e2e-test=webhook-disallow or with a container
// named *webhook-disallow*, naming every reason; webhook-e2e-test=wait-forever never
// answers (the timeout tests).
func admitPod(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var pod corev1.Pod
	if err := decodeObject(req, &podsResource, &pod); err != nil {
		return deny(err.Error())
	}
	var reasons []string
	switch pod.Labels["webhook-e2e-test"] {
	case "webhook-disallow":
		reasons = append(reasons, "the pod contains unwanted label;")
	case "wait-forever":
		<-ctx.Done()
		return nil
	}
	for _, c := range pod.Spec.Containers {
		if strings.Contains(c.Name, "webhook-disallow") {
			reasons = append(reasons, "the pod contains unwanted container name;")
		}
	}
	if len(reasons) > 0 {
		return deny(strings.Join(reasons, " "))
	}
	return allow()
}

// denyAttach refuses `kubectl attach -i -c container1 to-be-attached-pod`.
func denyAttach(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Name != "to-be-attached-pod" {
		return allow()
	}
	if req.Resource != podsResource || req.SubResource != "attach" {
		return deny(fmt.Sprintf("expect pods/attach, got %s/%s", req.Resource, req.SubResource))
	}
	var options corev1.PodAttachOptions
	if err := json.Unmarshal(req.Object.Raw, &options); err != nil {
		return deny(err.Error())
	}
	if !options.Stdin || options.Container != "container1" {
		return allow()
	}
	return deny("attaching to pod 'to-be-attached-pod' is not allowed")
}

// addInitContainer gives the pod webhook-to-be-mutated an init container, once.
func addInitContainer(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var pod corev1.Pod
	if err := decodeObject(req, &podsResource, &pod); err != nil {
		return deny(err.Error())
	}
	if pod.Name != "webhook-to-be-mutated" || hasContainer(pod.Spec.InitContainers, "webhook-added-init-container") {
		return allow()
	}
	return jsonPatch(`[{"op":"add","path":"/spec/initContainers","value":[{"image":"webhook-added-image","name":"webhook-added-init-container","resources":{}}]}]`)
}

// addSidecar appends the container webhook-added-sidecar running --sidecar-image, once.
func (w *webhook) addSidecar(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if w.sidecarImage == "" {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "No image specified by the sidecar-image parameter"}}
	}
	var pod corev1.Pod
	if err := decodeObject(req, &podsResource, &pod); err != nil {
		return deny(err.Error())
	}
	if hasContainer(pod.Spec.Containers, "webhook-added-sidecar") {
		return allow()
	}
	sidecar, _ := json.Marshal(corev1.Container{Name: "webhook-added-sidecar", Image: w.sidecarImage})
	return jsonPatch(fmt.Sprintf(`[{"op":"add","path":"/spec/containers/-","value":%s}]`, sidecar))
}

func hasContainer(containers []corev1.Container, name string) bool {
	for _, c := range containers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// dataObject is what the configmap and custom resource endpoints read: the tests' custom
// resources carry a ConfigMap-like top-level "data" map.
type dataObject struct {
	Data map[string]string `json:"data"`
}

// admitData denies creating or updating an object whose data holds
// webhook-e2e-test=webhook-disallow, and deleting one holding webhook-nondeletable, on
// the resource only (any, if nil).
func admitData(only *metav1.GroupVersionResource, disallowed, nondeletable string) admitFunc {
	return func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var obj dataObject
		if err := decodeObject(req, only, &obj); err != nil {
			return deny(err.Error())
		}
		switch value := obj.Data["webhook-e2e-test"]; {
		case value == "webhook-disallow" && (req.Operation == admissionv1.Create || req.Operation == admissionv1.Update):
			return denyReason(disallowed)
		case value == "webhook-nondeletable" && req.Operation == admissionv1.Delete:
			return denyReason(nondeletable)
		}
		return allow()
	}
}

// mutateData is the two-stage mutation of configmaps and custom resources: data
// mutation-start=yes gains mutation-stage-1=yes, and mutation-stage-1=yes gains
// mutation-stage-2=yes (so a reinvoked or second webhook takes the second step).
func mutateData(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var obj dataObject
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return deny(err.Error())
	}
	switch {
	case obj.Data["mutation-stage-1"] == "yes":
		return jsonPatch(`[{"op":"add","path":"/data/mutation-stage-2","value":"yes"}]`)
	case obj.Data["mutation-start"] == "yes":
		return jsonPatch(`[{"op":"add","path":"/data/mutation-stage-1","value":"yes"}]`)
	}
	return allow()
}

// admitCRD denies CustomResourceDefinitions labelled webhook-e2e-test=webhook-disallow.
func admitCRD(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	r := req.Resource
	if r.Group != "apiextensions.k8s.io" || r.Resource != "customresourcedefinitions" || (r.Version != "v1" && r.Version != "v1beta1") {
		return deny(fmt.Sprintf("expect resource to be apiextensions.k8s.io/v1 or v1beta1 customresourcedefinitions, got %s", r))
	}
	var crd struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(req.Object.Raw, &crd); err != nil {
		return deny(err.Error())
	}
	if crd.Metadata.Labels["webhook-e2e-test"] == "webhook-disallow" {
		return deny("the crd contains unwanted label")
	}
	return allow()
}
