package apiserver

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WriteGuard checks an object about to be stored (old is nil on create) against the
// requesting user (UserFrom(ctx)): RBAC's escalation check. It moves into the admission
// chain when there is one.
type WriteGuard func(ctx context.Context, gr schema.GroupResource, obj, old runtime.Object) error

// SetWriteGuard installs g; call it before serving.
func (s *Server) SetWriteGuard(g WriteGuard) { s.writeGuard = g }

func (s *Server) guardWrite(ctx context.Context, res *registry.Resource, obj, old runtime.Object) error {
	if s.writeGuard == nil {
		return nil
	}
	return s.writeGuard(ctx, res.GroupResource(), obj, old)
}
