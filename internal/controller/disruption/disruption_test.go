package disruption_test

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/disruption"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMarkAsKube: the condition comes after the pod's others, as kube's taint eviction and
// preemption write it (UpdatePodCondition, then PatchPodStatus), observes the pod's
// generation, and a DisruptionTarget already there is updated in its place. Against the
// API server: its strategic merge, not a fake's, decides the order.
func TestMarkAsKube(t *testing.T) {
	ctx := context.Background()
	client := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} }).Client
	for _, tc := range []struct {
		name  string
		have  []corev1.PodConditionType
		order []corev1.PodConditionType
	}{
		{"new", []corev1.PodConditionType{corev1.PodReady, corev1.PodScheduled}, []corev1.PodConditionType{corev1.PodReady, corev1.PodScheduled, corev1.DisruptionTarget}},
		{"present", []corev1.PodConditionType{corev1.DisruptionTarget, corev1.PodReady}, []corev1.PodConditionType{corev1.DisruptionTarget, corev1.PodReady}},
	} {
		pod, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range tc.have {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, Reason: "Before"})
		}
		if pod, err = client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := disruption.Mark(ctx, client, pod, "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint"); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := client.CoreV1().Pods("default").Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var order []corev1.PodConditionType
		for _, c := range got.Status.Conditions {
			order = append(order, c.Type)
			if c.Type == corev1.DisruptionTarget && (c.Reason != "DeletionByTaintManager" || c.ObservedGeneration != pod.Generation) {
				t.Errorf("%s: %+v, want reason DeletionByTaintManager, observedGeneration %d", tc.name, c, pod.Generation)
			}
		}
		if len(order) != len(tc.order) {
			t.Fatalf("%s: conditions %v, want %v", tc.name, order, tc.order)
		}
		for i := range order {
			if order[i] != tc.order[i] {
				t.Errorf("%s: conditions %v, want %v", tc.name, order, tc.order)
				break
			}
		}
	}
}
