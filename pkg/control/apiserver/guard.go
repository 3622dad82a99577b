package apiserver

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WriteGuard checks an object about to be stored (old is nil on create) against the
// requesting user (authn.UserFrom(ctx)): RBAC's escalation check.
type WriteGuard func(ctx context.Context, gr schema.GroupResource, obj, old runtime.Object) error

// SetWriteGuard installs g as a validating admission plugin of every create and update;
// call it before serving.
func (s *Server) SetWriteGuard(g WriteGuard) { s.objects.AddValidating(writeGuardAdmission(g)) }

type writeGuardAdmission WriteGuard

func (g writeGuardAdmission) Validate(ctx context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create && a.Operation != generic.Update {
		return nil
	}
	return g(ctx, a.Resource.GroupResource(), a.Object, a.OldObject)
}

// AddValidatingAdmission appends p to the validating admission plugins, for plugins that
// need what is made after the server (the authorizer); call it before serving.
func (s *Server) AddValidatingAdmission(p generic.ValidatingAdmission) { s.objects.AddValidating(p) }

// AdmitNamespacedCreate refuses, as NamespaceLifecycle does, the create of a subresource
// served outside the registry (a TokenRequest) in a missing or terminating namespace.
func (s *Server) AdmitNamespacedCreate(ctx context.Context, gvr schema.GroupVersionResource, sub, ns, name string) error {
	res, ok := s.reg.Lookup(gvr)
	if !ok {
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return s.lifecycle.Admit(ctx, &generic.Attributes{Operation: generic.Create, Resource: res, Subresource: sub, Namespace: ns, Name: name})
}
