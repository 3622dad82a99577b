package generic

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// metadata.generation is kept only by the kinds whose Kubernetes strategy keeps it: a
// Deployment starts at 1 and counts spec changes; a Service or ConfigMap has none (kubectl
// get -o yaml shows no generation), whatever the client sends. A deletion that waits for
// finalizers counts as a change of a Deployment.
func TestGenerationOnlyForKindsThatTrackIt(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	deployments, ok := s.reg.Lookup(appsv1.SchemeGroupVersion.WithResource("deployments"))
	if !ok {
		t.Fatal("no deployments")
	}
	labels := map[string]string{"app": "a"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	created, err := s.Create(ctx, deployments, d, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.(*appsv1.Deployment).Generation; g != 1 {
		t.Errorf("created deployment: generation %d, want 1", g)
	}
	updated, err := s.Update(ctx, deployments, "default", "a", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
		d := cur.(*appsv1.Deployment).DeepCopy()
		d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := updated.(*appsv1.Deployment).Generation; g != 2 {
		t.Errorf("deployment with a new image: generation %d, want 2", g)
	}
	foreground := metav1.DeletePropagationForeground
	deleted, err := s.Delete(ctx, deployments, "default", "a", metav1.DeleteOptions{PropagationPolicy: &foreground})
	if err != nil {
		t.Fatal(err)
	}
	if d := deleted.(*appsv1.Deployment); d.DeletionTimestamp == nil || d.Generation != 3 {
		t.Errorf("deployment deleted in the foreground: deletionTimestamp %v generation %d, want set and 3", d.DeletionTimestamp, d.Generation)
	}

	services := s.resource(t, "services")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", Generation: 7},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}
	created, err = s.Create(ctx, services, svc, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.(*corev1.Service).Generation; g != 0 {
		t.Errorf("created service: generation %d, want none", g)
	}
	updated, err = s.Update(ctx, services, "default", "s", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
		svc := cur.(*corev1.Service).DeepCopy()
		svc.Spec.Ports[0].Port = 81
		return svc, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := updated.(*corev1.Service).Generation; g != 0 {
		t.Errorf("service with a new port: generation %d, want none", g)
	}
}
