// Package podrefs reads the objects a pod's volumes and environment name (ConfigMaps,
// Secrets, claims), answering as the kubelet does: a missing optional one is no error, a
// missing required one is `configmap "x" not found`.
package podrefs

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Get reads the object called name with get (a typed client's Get); found is false, with
// no error, when it does not exist and optional. kind words the errors ("configmap").
func Get[T any](ctx context.Context, get func(context.Context, string, metav1.GetOptions) (T, error), kind, name string, optional bool) (obj T, found bool, err error) {
	got, err := get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && optional:
		return obj, false, nil
	case apierrors.IsNotFound(err):
		return obj, false, fmt.Errorf("%s %q not found", kind, name)
	case err != nil:
		return obj, false, fmt.Errorf("get %s %q: %w", kind, name, err)
	}
	return got, true, nil
}
