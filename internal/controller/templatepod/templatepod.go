// Package templatepod makes a workload's new pod from its pod template, as kube's
// controllers do (GetPodFromTemplate): the template's labels, annotations, finalizers and
// spec, a name generated after the owner's, and the owner as its controller.
package templatepod

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// New is a pod of owner (of kind) made from t, which it does not share: the labels and
// annotations are never nil, so that a controller can add its own.
func New(t *corev1.PodTemplateSpec, owner metav1.Object, kind schema.GroupVersionKind) *corev1.Pod {
	t = t.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			// The API server cuts a long prefix so that the name fits.
			GenerateName:    owner.GetName() + "-",
			Namespace:       owner.GetNamespace(),
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, kind)},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	return pod
}
