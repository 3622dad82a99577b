package templatepod

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod gets the template's metadata as copies, a name generated after its owner's and
// the owner as its controller, as kube's GetPodFromTemplate gives them.
func TestNew(t *testing.T) {
	owner := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "u1"}}
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}, Finalizers: []string{"example.com/hold"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	pod := New(tmpl, owner, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	ref := metav1.GetControllerOf(pod)
	if pod.GenerateName != "db-" || pod.Namespace != "ns" || pod.Labels["app"] != "db" || pod.Annotations == nil ||
		!slices.Equal(pod.Finalizers, []string{"example.com/hold"}) || pod.Spec.Containers[0].Image != "busybox" ||
		ref == nil || ref.Kind != "StatefulSet" || ref.UID != "u1" {
		t.Errorf("pod from template: %+v", pod)
	}
	pod.Labels["extra"], pod.Finalizers[0], pod.Spec.Containers[0].Image = "x", "y", "z"
	if len(tmpl.Labels) != 1 || tmpl.Finalizers[0] != "example.com/hold" || tmpl.Spec.Containers[0].Image != "busybox" {
		t.Errorf("the pod shares the template: %+v", tmpl)
	}
}
