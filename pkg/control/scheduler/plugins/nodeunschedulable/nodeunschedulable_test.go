package nodeunschedulable

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
)

func TestCordoned(t *testing.T) {
	n := schedtest.Node("n1", nil)
	n.Spec.Unschedulable = true
	snap := schedtest.Snapshot([]*corev1.Node{n, schedtest.Node("n2", nil)})
	pod := schedtest.Pod("p", nil, 0)
	if got := schedtest.Filter(Plugin{}, snap, pod); got["n1"] != ErrReason || got["n2"] != "" {
		t.Errorf("cordoned: %v", got)
	}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	if got := schedtest.Filter(Plugin{}, snap, pod)["n1"]; got != "" {
		t.Errorf("a pod tolerating the unschedulable taint (a DaemonSet's) was refused: %q", got)
	}
}
