package core_test

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestPodGeneration: as kube's pod strategy (GA in 1.35), a new pod's generation is 1
// whatever the client sent, a spec change counts one more, a label change none, and a
// graceful deletion one more (the pod generation conformance tests).
func TestPodGeneration(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, pods := context.Background(), c.Client.CoreV1().Pods(c.Namespace)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gen", Generation: 100},
		Spec: corev1.PodSpec{NodeName: "node-1", ActiveDeadlineSeconds: ptr.To[int64](5000),
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	got, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, want int64) {
		t.Helper()
		if got.Generation != want {
			t.Errorf("%s: generation %d, want %d", step, got.Generation, want)
		}
	}
	check("created with 100", 1)
	patch := func(p string) {
		t.Helper()
		if got, err = pods.Patch(ctx, "gen", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(`{"spec":{"activeDeadlineSeconds":4999}}`)
	check("spec changed", 2)
	patch(`{"metadata":{"labels":{"time":"now"}}}`)
	check("label changed", 2)
	if err := pods.Delete(ctx, "gen", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](60)}); err != nil {
		t.Fatal(err)
	}
	if got, err = pods.Get(ctx, "gen", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	check("deleted gracefully", 3)
}
