package core

import (
	"reflect"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodCreateMergesLabelKeys: on create the pod's own values of matchLabelKeys and
// mismatchLabelKeys join each (anti-)affinity term's selector, and those of matchLabelKeys
// each topology spread constraint's, as kube's pod strategy (mutatePodAffinity,
// mutateTopologySpreadConstraints; MatchLabelKeysInPodTopologySpreadSelectorMerge is on
// by default in 1.36). A key the pod lacks adds nothing.
func TestPodCreateMergesLabelKeys(t *testing.T) {
	selector := func() *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	}
	term := corev1.PodAffinityTerm{LabelSelector: selector(), TopologyKey: "kubernetes.io/hostname",
		MatchLabelKeys: []string{"track", "absent"}, MismatchLabelKeys: []string{"tenant"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default",
		Labels: map[string]string{"app": "web", "track": "canary", "tenant": "a"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Affinity: &corev1.Affinity{
				PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 1, PodAffinityTerm: *term.DeepCopy()}}},
			},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector(), MatchLabelKeys: []string{"track"}}},
		}}
	if errs := registrytest.CreateSteps(PodRules, pod); len(errs) != 0 {
		t.Fatalf("create refused: %v", errs.ToAggregate())
	}
	track := metav1.LabelSelectorRequirement{Key: "track", Operator: metav1.LabelSelectorOpIn, Values: []string{"canary"}}
	tenant := metav1.LabelSelectorRequirement{Key: "tenant", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}}
	merged := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{track, tenant}}
	a := pod.Spec.Affinity
	for where, got := range map[string]*metav1.LabelSelector{
		"affinity":      a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector,
		"anti-affinity": a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector,
	} {
		if !reflect.DeepEqual(got, merged) {
			t.Errorf("%s selector = %v, want %v", where, got, merged)
		}
	}
	spread := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{track}}
	if got := pod.Spec.TopologySpreadConstraints[0].LabelSelector; !reflect.DeepEqual(got, spread) {
		t.Errorf("topology spread selector = %v, want %v", got, spread)
	}

	// A key of matchLabelKeys the user also put in the selector is then there twice,
	// which kube refuses.
	pod.ObjectMeta.ResourceVersion = ""
	pod.Spec.TopologySpreadConstraints[0].LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{track}}
	pod.Spec.Affinity = nil
	want := `spec.topologySpreadConstraints[0][0]: Invalid value: "track": exists in both matchLabelKeys and labelSelector`
	if got := registrytest.Messages(registrytest.CreateSteps(PodRules, pod)); len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
