package nodetaint

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestNewNodeIsTaintedNotReady(t *testing.T) {
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	admin := corev1.Taint{Key: "example.com/admin", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	for _, tc := range []struct {
		name     string
		op       generic.Operation
		sub      string
		given    []corev1.Taint
		wantKeys []string
	}{
		{"create", generic.Create, "", nil, []string{"node.kubernetes.io/not-ready:NoSchedule"}},
		{"create beside an admin's taint", generic.Create, "", []corev1.Taint{admin}, []string{"example.com/admin:NoSchedule", "node.kubernetes.io/not-ready:NoSchedule"}},
		{"create already tainted", generic.Create, "", []corev1.Taint{{Key: notReady.Key, Value: "v", Effect: notReady.Effect}}, []string{"node.kubernetes.io/not-ready:NoSchedule"}},
		{"update", generic.Update, "", nil, nil},
		{"status", generic.Update, "status", nil, nil},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: tc.given}}
		var old runtime.Object
		if tc.op == generic.Update {
			old = node.DeepCopy()
		}
		a := admissiontest.Attrs(t, tc.op, nodes, tc.sub, node, old)
		if err := (Plugin{}).Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, taint := range node.Spec.Taints {
			got = append(got, taint.Key+":"+string(taint.Effect))
		}
		if strings.Join(got, ",") != strings.Join(tc.wantKeys, ",") {
			t.Errorf("%s: taints %q, want %q", tc.name, got, tc.wantKeys)
		}
	}
}
