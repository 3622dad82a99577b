package nodedeclaredfeatures

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestValidate: a change of a bound pod's spec that needs a feature (a pod-level resize, a
// resize of a non-sidecar init container) is refused, in kube's words, unless its node
// declares the feature; other changes, unbound pods and other subresources pass.
func TestValidate(t *testing.T) {
	node := func(name string, declared ...string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{DeclaredFeatures: declared}}
	}
	var p *Plugin
	admissiontest.Informers(t, func(inf *admission.Informers) { p = New(inf) },
		node("bare"), node("capable", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"))

	cpu := func(v string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
	}
	// pod is a pod on nodeName at generation 1; change edits a copy at generation 2.
	pod := func(nodeName string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Generation: 1},
			Spec: corev1.PodSpec{NodeName: nodeName, Resources: ptr.To(cpu("100m")),
				InitContainers: []corev1.Container{{Name: "init", Resources: cpu("100m")}},
				Containers:     []corev1.Container{{Name: "c", Resources: cpu("100m")}}}}
	}
	change := func(old *corev1.Pod, edit func(*corev1.Pod)) *corev1.Pod {
		p := old.DeepCopy()
		p.Generation++
		edit(p)
		return p
	}
	podLevel := func(p *corev1.Pod) { p.Spec.Resources = ptr.To(cpu("200m")) }
	initResize := func(p *corev1.Pod) { p.Spec.InitContainers[0].Resources = cpu("200m") }
	containerResize := func(p *corev1.Pod) { p.Spec.Containers[0].Resources = cpu("200m") }
	sameGeneration := func(p *corev1.Pod) { podLevel(p); p.Generation-- }

	for _, tc := range []struct {
		name, node, sub string
		edit            func(*corev1.Pod)
		want            string
	}{
		{"pod-level resize, node declares nothing", "bare", "resize", podLevel,
			`pods "p" is forbidden: pod update requires features InPlacePodLevelResourcesVerticalScaling which are not available on node "bare"`},
		{"pod-level resize by update, node declares nothing", "bare", "", podLevel,
			`pods "p" is forbidden: pod update requires features InPlacePodLevelResourcesVerticalScaling which are not available on node "bare"`},
		{"pod-level and init resize, node declares nothing", "bare", "resize", func(p *corev1.Pod) { podLevel(p); initResize(p) },
			`pods "p" is forbidden: pod update requires features InPlacePodLevelResourcesVerticalScaling, InPlacePodVerticalScalingInitContainers which are not available on node "bare"`},
		{"pod-level resize, node gone", "gone", "resize", podLevel, `pods "p" is forbidden: node "gone" not found`},
		{"pod-level resize, node declares it", "capable", "resize", podLevel, ""},
		{"init resize, node declares it", "capable", "resize", initResize, ""},
		{"container resize needs no feature", "bare", "resize", containerResize, ""},
		{"unbound pod", "", "", podLevel, ""},
		{"generation unchanged", "bare", "resize", sameGeneration, ""},
		{"status subresource", "bare", "status", podLevel, ""},
	} {
		old := pod(tc.node)
		err := p.Validate(context.Background(), admissiontest.Attrs(t, generic.Update, corev1.SchemeGroupVersion.WithResource("pods"), tc.sub, change(old, tc.edit), old))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
