package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/fieldmanager"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
)

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	obj, warnings, err := s.decodeRequest(r, res, info)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	dry, err := dryRun(r, "CreateOptions")
	if err != nil {
		return err
	}
	setRequester(r.Context(), res, obj)
	created, err := s.objects.Create(r.Context(), res, obj, generic.CreateOptions{DryRun: dry})
	if err != nil {
		return err
	}
	return s.respond(w, r, res, http.StatusCreated, created)
}

// setRequester records the requester in an object being created, for kinds that keep it
// (a CSR's spec.username and groups).
func setRequester(ctx context.Context, res *registry.Resource, obj runtime.Object) {
	if res.Rules.Requester != nil {
		u, _ := authn.UserFrom(ctx)
		res.Rules.Requester(obj, &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra})
	}
}

// decodeRequest decodes the body into a new object of res and checks its namespace and name
// against the URL.
func (s *Server) decodeRequest(r *http.Request, res *registry.Resource, info requestInfo) (runtime.Object, []string, error) {
	directive := parseFieldValidation(r)
	obj, err := res.New()
	if err != nil {
		return nil, nil, err
	}
	var undeclared []func(runtime.Object) ([]string, error)
	if res.Rules.UnknownFields != nil {
		undeclared = append(undeclared, res.Rules.UnknownFields)
	}
	warnings, err := decodeBody(r, obj, res.GVK(), directive, undeclared...)
	if err != nil {
		return nil, nil, err
	}
	return obj, warnings, checkNames(res, obj, info)
}

// namespaceMismatch is kube's answer to a body whose namespace is not the URL's.
func namespaceMismatch() error {
	return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
}

func checkNames(res *registry.Resource, obj runtime.Object, info requestInfo) error {
	m := mustMeta(obj)
	if res.Namespaced {
		switch m.GetNamespace() {
		case "":
			m.SetNamespace(info.Namespace)
		case info.Namespace:
		default:
			return namespaceMismatch()
		}
	} else {
		m.SetNamespace("")
	}
	if info.Name != "" && info.Subresource == "" || info.Subresource == "status" || info.Subresource == "finalize" || info.Subresource == "approval" || info.Subresource == "ephemeralcontainers" || info.Subresource == "resize" {
		return checkName(m.GetName(), info.Name)
	}
	return nil
}

// checkName is kube-apiserver's refusal of an object whose name is not the URL's; an
// update's object must name itself (kube's checkName), the URL does not fill it in.
func checkName(name, urlName string) error {
	switch name {
	case urlName:
		return nil
	case "":
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", urlName))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, urlName))
}

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	body, warnings, err := s.decodeRequest(r, res, info)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	dry, err := dryRun(r, "UpdateOptions")
	if err != nil {
		return err
	}
	opts := generic.UpdateOptions{Subresource: info.Subresource, DryRun: dry, UID: mustMeta(body).GetUID()}
	obj, err := s.objects.Update(r.Context(), res, info.Namespace, info.Name, opts, func(runtime.Object) (runtime.Object, error) {
		obj := body.DeepCopyObject()
		fieldmanager.TakeManagedFieldsReset(r.Context(), obj)
		return obj, nil
	})
	if err != nil {
		return err
	}
	return s.respond(w, r, res, http.StatusOK, obj)
}
