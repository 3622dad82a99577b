package apiserver

import (
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serveBinding assigns a pod to a node (POST pods/NAME/binding), what the scheduler does.
// A POST of the legacy bindings collection comes here without a name: the Binding's name
// is the pod's, as kube-apiserver's LegacyBindingREST has it.
func (s *Server) serveBinding(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	var b corev1.Binding
	if _, err := decodeBody(r, &b, corev1.SchemeGroupVersion.WithKind("Binding"), validationIgnore); err != nil {
		return err
	}
	if info.Name == "" {
		info.Name = b.Name
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
	var ev policyv1.Eviction
	if _, err := decodeBody(r, &ev, policyv1.SchemeGroupVersion.WithKind("Eviction"), validationIgnore); err != nil {
		return err
	}
	if ev.Name != info.Name || (ev.Namespace != "" && ev.Namespace != info.Namespace) {
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
