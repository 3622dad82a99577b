package defaulttolerationseconds

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTolerationsAdded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		given []corev1.Toleration
		want  int
	}{
		{"none", nil, 2},
		{"tolerates not-ready", []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}, 2},
		{"tolerates everything", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, 1},
		{"NoSchedule only", []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, 3},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Tolerations: tc.given}}
		a := admissiontest.Attrs(t, generic.Create, corev1.SchemeGroupVersion.WithResource("pods"), "", pod, nil)
		if err := (Plugin{}).Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if len(pod.Spec.Tolerations) != tc.want {
			t.Errorf("%s: tolerations %+v, want %d", tc.name, pod.Spec.Tolerations, tc.want)
		}
		for _, tol := range pod.Spec.Tolerations[len(tc.given):] {
			if tol.TolerationSeconds == nil || *tol.TolerationSeconds != Seconds || tol.Effect != corev1.TaintEffectNoExecute {
				t.Errorf("%s: added %+v", tc.name, tol)
			}
		}
	}
}
