package generic

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apimachinery/pkg/runtime"
)

// A write holds the values its object draws from the cluster-wide ranges (a Service's
// cluster IP and node ports) as one store key each: claimed before the object is validated
// or admitted (as kube's BeginCreate and BeginUpdate allocate), given back if the write is
// refused or storing fails, released once the object no longer uses them.

// claim takes what obj needs from the ranges and old (nil on create) does not hold yet.
// The returned undo gives it back; it is never nil when err is nil, and a no-op for dry runs,
// which check the ranges without holding anything.
func (s *Store) claim(ctx context.Context, res *registry.Resource, obj, old runtime.Object, dry bool) (undo func(), err error) {
	if res.Rules.Claim == nil {
		return func() {}, nil
	}
	ranges := s.ranges
	if dry {
		ranges = ranges.DryRun()
	}
	giveBack, err := res.Rules.Claim(ctx, ranges, obj, old)
	if err != nil {
		return nil, err
	}
	if dry {
		return func() {}, nil
	}
	return func() {
		if err := giveBack(); err != nil {
			s.log.Error("could not give back what a failed write had claimed", "resource", res.Resource,
				"namespace", MustMeta(obj).GetNamespace(), "name", MustMeta(obj).GetName(), "err", err)
		}
	}, nil
}

// release gives back what old held and obj no longer does, after obj was stored; with
// deleted, obj is gone and everything either held is given back.
func (s *Store) release(ctx context.Context, res *registry.Resource, obj, old runtime.Object, deleted bool) {
	if res.Rules.Release == nil {
		return
	}
	ctx = context.WithoutCancel(ctx) // the client going away must not leak what obj held
	err := res.Rules.Release(ctx, s.ranges, obj, old)
	if deleted && err == nil {
		err = res.Rules.Release(ctx, s.ranges, nil, obj)
	}
	if err != nil {
		s.log.Error("could not release what a deleted or changed object held", "resource", res.Resource,
			"namespace", MustMeta(old).GetNamespace(), "name", MustMeta(old).GetName(), "err", err)
	}
}
