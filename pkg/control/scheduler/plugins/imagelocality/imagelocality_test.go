package imagelocality

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
)

func TestImageLocality(t *testing.T) {
	with := schedtest.Node("with", nil)
	with.Status.Images = []corev1.ContainerImage{{Names: []string{"big:latest"}, SizeBytes: 500 * mb}}
	snap := schedtest.Snapshot([]*corev1.Node{with, schedtest.Node("without", nil)})
	p, _ := New(schedtest.NewHandle(snap))
	pod := schedtest.Pod("p", nil, 0)
	pod.Spec.Containers[0].Image = "big"
	// 500 MB held by 1 of 2 nodes: 250 MB scaled between 23 MB and 1000 MB.
	if s := schedtest.Score(p, snap, pod); s["with"] != 23 || s["without"] != 0 {
		t.Errorf("scores %v, want with=23 without=0", s)
	}
	if Normalized("reg:5000/app") != "reg:5000/app:latest" || Normalized("app:v1") != "app:v1" || Normalized("app@sha256:ab") != "app@sha256:ab" {
		t.Error("Normalized")
	}
}
