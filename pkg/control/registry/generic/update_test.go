package generic

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "img", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}},
	}
}

func TestSpecChanged(t *testing.T) {
	old := testPod()
	cases := []struct {
		name   string
		change func(p *corev1.Pod)
		want   bool
	}{
		{"nothing", func(p *corev1.Pod) {}, false},
		{"status only", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, false},
		{"metadata only", func(p *corev1.Pod) { p.Labels["x"] = "y" }, false},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }, true},
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "img2" }, true},
		// the same quantity written another way is the same spec, as for Kubernetes' strategies
		{"quantity respelled", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1")
		}, false},
		{"nil vs empty list", func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{} }, false},
		{"pointer to zero vs nil", func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](0) }, true},
	}
	for _, c := range cases {
		obj := old.DeepCopy()
		c.change(obj)
		if got := specChanged(obj, old); got != c.want {
			t.Errorf("%s: specChanged = %v, want %v", c.name, got, c.want)
		}
	}
	if specChanged(&corev1.ConfigMap{Data: map[string]string{"a": "1"}}, &corev1.ConfigMap{}) {
		t.Error("a kind with no spec has no spec change")
	}
}

func TestWithField(t *testing.T) {
	base, src := testPod(), testPod()
	src.Spec.NodeName, src.Status.Phase, src.Labels["from"] = "n1", corev1.PodRunning, "src"
	got, err := withField(base, src, "status")
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*corev1.Pod)
	if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "" || p.Labels["from"] != "" {
		t.Fatalf("status from src, the rest from base: got phase %q node %q labels %v", p.Status.Phase, p.Spec.NodeName, p.Labels)
	}
	// the result shares nothing with either input
	p.Status.Conditions[0].Status = corev1.ConditionTrue
	p.Labels["mut"] = "x"
	if src.Status.Conditions[0].Status != corev1.ConditionFalse || base.Labels["mut"] != "" {
		t.Fatal("withField's result aliases its inputs")
	}
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}}
	got, err = withField(d, &appsv1.Deployment{}, "spec")
	if err != nil {
		t.Fatal(err)
	}
	if got.(*appsv1.Deployment).Spec.Replicas != nil {
		t.Fatal("spec not taken from src")
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "1"}}
	got, err = withField(cm, &corev1.ConfigMap{}, "status")
	if err != nil || got.(*corev1.ConfigMap).Data["a"] != "1" {
		t.Fatalf("a kind with no status is base unchanged: %v %v", got, err)
	}
}

func BenchmarkPrepareHelpers(b *testing.B) {
	old := testPod()
	obj := old.DeepCopy()
	obj.Spec.NodeName = "n1"
	var sink runtime.Object
	b.Run("specChanged", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if !specChanged(obj, old) {
				b.Fatal("spec changed")
			}
		}
	})
	b.Run("withField", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			sink, _ = withField(obj, old, "status")
		}
	})
	_ = sink
}
