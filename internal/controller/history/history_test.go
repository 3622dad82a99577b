package history

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPatchAsKube: the revision data is kube's getPatch bytes: "$patch" inside the
// template, every key sorted (the DaemonSet conformance test compares them byte for byte).
func TestPatchAsKube(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}}},
	}
	got, err := Patch(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"img","name":"c","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{}}]}}}}`
	if string(got) != want {
		t.Errorf("patch\n%s\nwant\n%s", got, want)
	}
}

// TestStatefulSetRevisionNameAsKube: a StatefulSet's revisions are named as kube's
// statefulset controller names them (newRevision, HashControllerRevision): FNV-32 of the
// revision's data and the collision count in decimal, 0 when the status has none. The
// names are kube's for the same template (computed with its code).
func TestStatefulSetRevisionNameAsKube(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}}},
	}}}
	for _, tc := range []struct {
		collisions *int32
		want       string
	}{{nil, "66695f6c9b"}, {ptr.To[int32](0), "66695f6c9b"}, {ptr.To[int32](1), "66695f6c9c"}} {
		set.Status.CollisionCount = tc.collisions
		o, err := NewStatefulSetOwner(set)
		if err != nil {
			t.Fatal(err)
		}
		if o.Hash != tc.want {
			t.Errorf("collisionCount %v: hash %q, want kube's %q", ptr.Deref(tc.collisions, -1), o.Hash, tc.want)
		}
	}
}
