// Package trim holds the transforms our informers apply before caching an object.
package trim

import "k8s.io/apimachinery/pkg/api/meta"

// ManagedFields drops metadata.managedFields, which no controller of ours reads: as
// kube-scheduler and kube-controller-manager do, to keep the caches of every pod and object
// small (and the Go collector's marking work with them). Anything that is not an object
// (a tombstone) passes through unchanged.
func ManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}
