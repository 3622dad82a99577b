package volumebinding

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

func TestWaitForFirstConsumerClaims(t *testing.T) {
	n1, n2 := schedtest.Node("n1", nil), schedtest.Node("n2", nil)
	n1.Labels = map[string]string{corev1.LabelHostname: "n1", "zone": "a"}
	n2.Labels = map[string]string{corev1.LabelHostname: "n2", "zone": "b"}
	snap := schedtest.Snapshot([]*corev1.Node{n1, n2})
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	immediate := storagev1.VolumeBindingImmediate
	classes := []any{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}, Provisioner: "minik8s.io/local-path", VolumeBindingMode: &wffc},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zone-a"}, Provisioner: "minik8s.io/local-path", VolumeBindingMode: &wffc,
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"a"}}}}}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "static"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "now"}, Provisioner: "minik8s.io/local-path", VolumeBindingMode: &immediate},
	}
	claim := func(name, class string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	// an available static volume on n2 only
	localPV := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-n2"}, Spec: corev1.PersistentVolumeSpec{
		StorageClassName: "static", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}}}}}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}
	objs := append(classes, claim("dyn", "local-path"), claim("zoned", "zone-a"), claim("static", "static"), claim("now", "now"), localPV)
	p, _ := New(schedtest.NewHandle(snap, objs...))
	withClaim := func(name string) *corev1.Pod {
		pod := schedtest.Pod("p", nil, 0)
		pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
		return pod
	}
	if got := schedtest.Filter(p, snap, withClaim("dyn")); got["n1"] != "" || got["n2"] != "" {
		t.Errorf("a provisioned claim fits every node: %v", got)
	}
	if got := schedtest.Filter(p, snap, withClaim("zoned")); got["n1"] != "" || got["n2"] != ErrReasonTopology {
		t.Errorf("allowed topologies: %v", got)
	}
	if got := schedtest.Filter(p, snap, withClaim("static")); got["n1"] != ErrReasonBindConflict || got["n2"] != "" {
		t.Errorf("no provisioner: only where a volume matches: %v", got)
	}
	if got := schedtest.Filter(p, snap, withClaim("now"))["n1"]; got != "prefilter: "+ErrReasonUnboundImmediate {
		t.Errorf("an unbound claim of an Immediate class waits: %q", got)
	}
}
