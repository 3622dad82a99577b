package generic

import (
	"context"
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// deletions records, for each admission of a DELETE, whether the object it was shown was
// marked for deletion already.
type deletions struct{ seen *[]string }

func (d deletions) Validate(_ context.Context, a *Attributes) error {
	if a.Operation == Delete {
		state := "live"
		if MustMeta(a.OldObject).GetDeletionTimestamp() != nil {
			state = "marked"
		}
		*d.seen = append(*d.seen, state)
	}
	return nil
}

// A deletion is admitted as kube-apiserver's store admits it (its deleteValidation): once
// for the mark, again for the removal of the marked object when nothing holds it, and not
// at all when it leaves a graceful deletion under way as it is.
func TestDeleteAdmittedForMarkAndRemoval(t *testing.T) {
	var seen []string
	s, _ := newTestStore(t, Admission{Validating: []ValidatingAdmission{deletions{&seen}}})
	ctx := t.Context()
	pods, cms := s.resource(t, "pods"), s.resource(t, "configmaps")
	expect := func(what string, want ...string) {
		t.Helper()
		if !slices.Equal(seen, want) {
			t.Errorf("%s: admitted %q, want %q", what, seen, want)
		}
		seen = nil
	}
	del := func(res string, name string, grace *int64) {
		t.Helper()
		r := map[string]*registry.Resource{"pods": pods, "configmaps": cms}[res]
		if _, _, err := s.Delete(ctx, r, "default", name, metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"forced", "graceful"} {
		p := pod(name)
		p.Spec.NodeName = "node-1"
		if _, err := s.Create(ctx, pods, p, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	seen = nil

	del("configmaps", "c", nil)
	expect("a config map", "live")
	del("pods", "forced", ptr.To[int64](0))
	expect("a pod deleted with no grace", "live", "marked")
	del("pods", "graceful", nil)
	expect("a pod given its grace", "live")
	del("pods", "graceful", nil)
	expect("a graceful deletion asked again")
	del("pods", "graceful", ptr.To[int64](0))
	expect("a graceful deletion hurried to 0", "marked", "marked")
}
