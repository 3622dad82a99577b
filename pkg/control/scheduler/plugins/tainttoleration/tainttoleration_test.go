package tainttoleration

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
)

func TestTaints(t *testing.T) {
	gpu := schedtest.Node("gpu", nil)
	gpu.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	soft := schedtest.Node("soft", nil)
	soft.Spec.Taints = []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}
	snap := schedtest.Snapshot([]*corev1.Node{gpu, soft, schedtest.Node("plain", nil)})
	pod := schedtest.Pod("p", nil, 0)
	got := schedtest.Filter(Plugin{}, snap, pod)
	if got["gpu"] != "node(s) had untolerated taint {dedicated: gpu}" || got["soft"] != "" || got["plain"] != "" {
		t.Errorf("filter: %v", got)
	}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	if got := schedtest.Filter(Plugin{}, snap, pod)["gpu"]; got != "" {
		t.Errorf("tolerated taint: %q", got)
	}
	if s := schedtest.Score(Plugin{}, snap, pod); s["plain"] != 100 || s["soft"] != 0 {
		t.Errorf("PreferNoSchedule score: %v", s)
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists})
	if s := schedtest.Score(Plugin{}, snap, pod); s["plain"] != 100 || s["soft"] != 100 {
		t.Errorf("tolerated PreferNoSchedule: %v", s)
	}
}
