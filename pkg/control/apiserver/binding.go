package apiserver

import (
	"bytes"
	"io"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// serveBinding assigns a pod to a node (POST pods/NAME/binding), what the scheduler does.
// A POST of the legacy bindings collection comes here without a name: the Binding's name
// is the pod's, as kube-apiserver's LegacyBindingREST has it.
func (s *Server) serveBinding(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	var b corev1.Binding
	if _, err := decodeBody(r, &b, corev1.SchemeGroupVersion.WithKind("Binding"), validationIgnore); err != nil {
		return err
	}
	switch {
	case b.Namespace != "" && b.Namespace != info.Namespace:
		return namespaceMismatch()
	case info.Name == "" && b.Name == "":
		return apierrors.NewBadRequest("Name parameter required.")
	case info.Name == "":
		info.Name = b.Name
	case b.Name != info.Name:
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	dry, err := dryRun(r, "CreateOptions")
	if err != nil {
		return err
	}
	if err := s.objects.Bind(r.Context(), res, info.Namespace, info.Name, &b, dry); err != nil {
		return err
	}
	responsewriters.WriteJSON(w, http.StatusCreated, successStatus(http.StatusCreated))
	return nil
}

// serveEviction deletes a pod the way `kubectl drain` asks for it (POST pods/NAME/eviction),
// within its PodDisruptionBudget.
func (s *Server) serveEviction(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	want, err := evictionKind(r)
	if err != nil {
		return err
	}
	var ev policyv1.Eviction
	if _, err := decodeBody(r, &ev, want, validationIgnore); err != nil {
		return err
	}
	switch {
	case ev.Namespace != "" && ev.Namespace != info.Namespace:
		return namespaceMismatch()
	case ev.Name != info.Name:
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	dry, err := dryRun(r, "CreateOptions")
	if err != nil {
		return err
	}
	if err := s.objects.Evict(r.Context(), res, info.Namespace, info.Name, &ev, dry); err != nil {
		return err
	}
	responsewriters.WriteJSON(w, http.StatusCreated, successStatus(http.StatusCreated))
	return nil
}

func successStatus(code int32) metav1.Status {
	return metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: code}
}

// evictionKind is the kind an eviction's body is decoded as: policy/v1beta1 when the body
// says so, as kube's EvictionREST accepts it beside policy/v1 (the types are the same),
// else policy/v1. The body is left to be read again.
func evictionKind(r *http.Request) (schema.GroupVersionKind, error) {
	v1 := policyv1.SchemeGroupVersion.WithKind("Eviction")
	data, err := readRaw(r)
	if err != nil {
		return v1, err
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	if gvk, err := jsonserializer.DefaultMetaFactory.Interpret(data); err == nil && gvk.GroupVersion() == policyv1beta1.SchemeGroupVersion {
		return policyv1beta1.SchemeGroupVersion.WithKind("Eviction"), nil
	}
	return v1, nil
}
