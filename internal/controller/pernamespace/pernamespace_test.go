package pernamespace

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCreateDone: only an object already there or a namespace gone or terminating ends
// the create; a quota's 403 is retried, as in kube's serviceaccount and
// rootcacertpublisher controllers.
func TestCreateDone(t *testing.T) {
	cms := schema.GroupResource{Resource: "configmaps"}
	terminating := apierrors.NewForbidden(cms, "kube-root-ca.crt", errors.New("namespace ns is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"already exists", apierrors.NewAlreadyExists(cms, "kube-root-ca.crt"), true},
		{"namespace gone", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns"), true},
		{"namespace terminating", terminating, true},
		{"quota exceeded", apierrors.NewForbidden(cms, "kube-root-ca.crt", errors.New("exceeded quota: q, requested: count/configmaps=1")), false},
		{"server error", apierrors.NewInternalError(errors.New("boom")), false},
	} {
		if got := CreateDone(tc.err); got != tc.want {
			t.Errorf("%s: CreateDone = %v, want %v", tc.name, got, tc.want)
		}
	}
}
