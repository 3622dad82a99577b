package agent

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/stats"
)

// pressureConditions are the kubelet's words for each pressure condition, off and on.
var pressureConditions = []struct {
	cond                  stats.Condition
	typ                   corev1.NodeConditionType
	offReason, offMessage string
	onReason, onMessage   string
}{
	{stats.MemoryPressure, corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
	{stats.DiskPressure, corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", "KubeletHasDiskPressure", "kubelet has disk pressure"},
	{stats.PIDPressure, corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available", "KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
}

// setPressureConditions sets MemoryPressure, DiskPressure and PIDPressure from the latest
// usage sample against --eviction-hard, as the kubelet's eviction manager decides them
// (minilet does not evict pods).
func (a *Agent) setPressureConditions(status *corev1.NodeStatus, now metav1.Time) {
	if a.stats != nil && a.pressure != nil {
		if snap := a.stats.Latest(); snap != nil {
			a.pressure.Observe(&snap.Summary, now.Time)
		}
	}
	for _, p := range pressureConditions {
		var under bool
		var crossed []string
		if a.pressure != nil {
			under, crossed = a.pressure.Under(p.cond, a.clock.Now())
		}
		if under {
			msg := p.onMessage
			if len(crossed) > 0 {
				msg += " (" + strings.Join(crossed, "; ") + ")"
			}
			setNodeCondition(status, now, p.typ, corev1.ConditionTrue, p.onReason, msg)
		} else {
			setNodeCondition(status, now, p.typ, corev1.ConditionFalse, p.offReason, p.offMessage)
		}
	}
}

// newPressure reads --eviction-hard (checked by Validate).
func newPressure(cfg Config) *stats.Pressure {
	thresholds, _ := stats.ParseThresholds(cfg.EvictionHard)
	period := cfg.EvictionPressureTransitionPeriod
	if period <= 0 {
		period = stats.DefaultPressureTransitionPeriod
	}
	return stats.NewPressure(thresholds, period)
}
