package volumebinding

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClaims(t *testing.T) {
	snap := schedtest.Snapshot([]*corev1.Node{schedtest.Node("n1", nil), schedtest.Node("n2", nil)})
	unbound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: "default"}}
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
		Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}}}}}}}}
	p, _ := New(schedtest.NewHandle(snap, unbound, bound, pv))
	withClaim := func(name string) *corev1.Pod {
		pod := schedtest.Pod("p", nil, 0)
		pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
		return pod
	}
	if got := schedtest.Filter(p, snap, withClaim("unbound"))["n1"]; got != "prefilter: "+ErrReasonUnboundImmediate {
		t.Errorf("unbound claim: %q", got)
	}
	if got := schedtest.Filter(p, snap, withClaim("missing"))["n1"]; got != `prefilter: persistentvolumeclaim "missing" not found` {
		t.Errorf("missing claim: %q", got)
	}
	if got := schedtest.Filter(p, snap, withClaim("bound")); got["n1"] != ErrReasonNodeConflict || got["n2"] != "" {
		t.Errorf("bound claim with node affinity: %v", got)
	}
	if got := schedtest.Filter(p, snap, schedtest.Pod("p", nil, 0)); got["n1"] != "" {
		t.Errorf("no claims: %v", got)
	}
}
