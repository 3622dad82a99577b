package eviction

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/minik8s/minik8s/pkg/agent/podsync"
	"github.com/minik8s/minik8s/pkg/qos"
	"github.com/minik8s/minik8s/pkg/stats"
)

// nodeConditionMessageFmt is the kubelet's message for a pod refused under pressure.
const nodeConditionMessageFmt = "The node had condition: %v. "

// nodeConditions are the pressure conditions admission looks at, in the kubelet's order.
var nodeConditions = []struct {
	cond stats.Condition
	typ  corev1.NodeConditionType
}{
	{stats.MemoryPressure, corev1.NodeMemoryPressure},
	{stats.DiskPressure, corev1.NodeDiskPressure},
	{stats.PIDPressure, corev1.NodePIDPressure},
}

// Admission refuses new pods the node cannot take under pressure, as the kubelet's
// eviction admit handler: under MemoryPressure alone, BestEffort pods that do not
// tolerate the memory-pressure taint; under any other pressure condition, every pod but
// the critical ones.
type Admission struct {
	Pressure *stats.Pressure
	Now      func() time.Time
}

// Admit says whether the node takes pod, and if not the reason and message it is
// rejected with.
func (a Admission) Admit(pod *corev1.Pod) (ok bool, reason, message string) {
	now := a.Now()
	var under []corev1.NodeConditionType
	for _, c := range nodeConditions {
		if on, _ := a.Pressure.Under(c.cond, now); on {
			under = append(under, c.typ)
		}
	}
	if len(under) == 0 || critical(pod) {
		return true, "", ""
	}
	if len(under) == 1 && under[0] == corev1.NodeMemoryPressure {
		if qos.Class(pod) != corev1.PodQOSBestEffort {
			return true, "", ""
		}
		taint := &corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
		if corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, taint, false) {
			return true, "", ""
		}
	}
	return false, podsync.EvictedReason, fmt.Sprintf(nodeConditionMessageFmt, under)
}
