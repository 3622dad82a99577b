package history

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
