package runtimeclass

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestAdmit: a pod naming a missing RuntimeClass is refused (Forbidden, kube's words),
// one the informer has not seen yet is found in the store, a class's overhead and
// scheduling are given to the pod, and conflicts with what the pod says are refused.
func TestAdmit(t *testing.T) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	overhead := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	toleration := corev1.Toleration{Key: "sandboxed", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	kata := &nodev1.RuntimeClass{TypeMeta: metav1.TypeMeta{Kind: "RuntimeClass", APIVersion: "node.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
		Overhead:   &nodev1.Overhead{PodFixed: overhead},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "kata"}, Tolerations: []corev1.Toleration{toleration}}}
	late := &nodev1.RuntimeClass{TypeMeta: kata.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "late"}, Handler: "runc"}

	st := admissiontest.Stored(t, reg, nodev1.SchemeGroupVersion.WithResource("runtimeclasses"), kata, late)
	var p *Plugin
	admissiontest.Informers(t, func(inf *admission.Informers) { p = New(inf, st, reg) }, kata)
	admit := func(spec corev1.PodSpec) (*corev1.Pod, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: spec}
		return pod, p.Admit(context.Background(), admissiontest.Attrs(t, generic.Create, corev1.SchemeGroupVersion.WithResource("pods"), "", pod, nil))
	}

	pod, err := admit(corev1.PodSpec{RuntimeClassName: ptr.To("kata"), NodeSelector: map[string]string{"zone": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !pod.Spec.Overhead.Cpu().Equal(resource.MustParse("250m")) || pod.Spec.NodeSelector["sandbox"] != "kata" || pod.Spec.NodeSelector["zone"] != "a" ||
		len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0] != toleration {
		t.Errorf("pod of kata: overhead %v, nodeSelector %v, tolerations %v", pod.Spec.Overhead, pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}
	if _, err := admit(corev1.PodSpec{RuntimeClassName: ptr.To("late")}); err != nil {
		t.Errorf("a class only the store holds yet: %v", err)
	}
	if _, err := admit(corev1.PodSpec{}); err != nil {
		t.Errorf("a pod with no class: %v", err)
	}
	for _, tc := range []struct {
		spec corev1.PodSpec
		want string
	}{
		{corev1.PodSpec{RuntimeClassName: ptr.To("nowhere")}, `pods "p" is forbidden: pod rejected: RuntimeClass "nowhere" not found`},
		{corev1.PodSpec{RuntimeClassName: ptr.To("kata"), Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			`pods "p" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{corev1.PodSpec{Overhead: overhead}, `pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{corev1.PodSpec{RuntimeClassName: ptr.To("kata"), NodeSelector: map[string]string{"sandbox": "gvisor"}},
			`pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = kata; pod.spec.nodeSelector[sandbox] = gvisor`},
	} {
		if _, err := admit(tc.spec); !apierrors.IsForbidden(err) || err.Error() != tc.want {
			t.Errorf("%+v: %v, want Forbidden %q", tc.spec, err, tc.want)
		}
	}
}
