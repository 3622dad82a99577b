package core

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodUpdatableFields: kube's ValidatePodUpdate lets activeDeadlineSeconds be set or
// lowered but not raised, unset or put out of range, refuses added or removed containers
// before comparing the rest, and lets a negative grace period become 1.
func TestPodUpdatableFields(t *testing.T) {
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}, ActiveDeadlineSeconds: ptr.To[int64](10)}}
	PodRules.Default(old)
	for _, tc := range []struct {
		what   string
		change func(*corev1.PodSpec)
		want   []string
	}{
		{"lowered", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](5) }, nil},
		{"raised", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](20) },
			[]string{"spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"}},
		{"unset", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = nil },
			[]string{"spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"}},
		{"negative", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](-1) },
			[]string{"spec.activeDeadlineSeconds: Invalid value: -1: must be between 1 and 2147483647, inclusive",
				"spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive"}},
		{"a container added", func(s *corev1.PodSpec) { s.Containers = append(s.Containers, corev1.Container{Name: "d", Image: "x"}) },
			[]string{"spec.containers: Forbidden: pod updates may not add or remove containers"}},
	} {
		p := old.DeepCopy()
		tc.change(&p.Spec)
		PodRules.Default(p)
		if got := registrytest.Messages(registrytest.UpdateSteps(PodRules, p, old)); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.what, got, tc.want)
		}
	}

	negative := old.DeepCopy()
	negative.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1)
	one := negative.DeepCopy()
	one.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	if errs := registrytest.UpdateSteps(PodRules, one, negative); len(errs) != 0 {
		t.Errorf("a negative grace period set to 1: %v", errs.ToAggregate())
	}
}
