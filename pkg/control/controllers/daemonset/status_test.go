package daemonset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodOfCurrentTemplateGenerationIsUpdated: as kube's IsPodUpdated, a pod is of the
// current template when its controller-revision-hash is the template's, or its
// pod-template-generation is the DaemonSet's deprecated.daemonset.template.generation (a
// pod whose hash changed with the collision count, or the hashing, is not replaced).
func TestPodOfCurrentTemplateGenerationIsUpdated(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "3"}}}
	pod := func(hash, gen string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			appsv1.DefaultDaemonSetUniqueLabelKey: hash, extensionsv1beta1.DaemonSetTemplateGenerationKey: gen}}}
	}
	for _, tc := range []struct {
		hash, gen string
		want      bool
	}{{"new", "2", true}, {"old", "3", true}, {"old", "2", false}} {
		byNode := map[string][]*corev1.Pod{"n": {pod(tc.hash, tc.gen)}}
		st := status(ds, "new", byNode, map[string]bool{"n": true})
		if got := st.UpdatedNumberScheduled == 1; got != tc.want {
			t.Errorf("pod of hash %s generation %s: updated %v, want %v", tc.hash, tc.gen, got, tc.want)
		}
		updated, old, _ := updatedAndOld(byNode["n"], ds, "new")
		if got := updated != nil && old == nil; got != tc.want {
			t.Errorf("pod of hash %s generation %s: found updated %v, want %v", tc.hash, tc.gen, got, tc.want)
		}
	}
}
