package nodedeclaredfeatures

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestFilter: a pod needing a declared feature (host network in a user namespace) goes only
// to nodes declaring it, others refused in kube-scheduler's words; a pod needing none goes
// anywhere.
func TestFilter(t *testing.T) {
	capable := schedtest.Node("capable", nil)
	capable.Status.DeclaredFeatures = []string{"UserNamespacesHostNetworkSupport"}
	snap := schedtest.Snapshot([]*corev1.Node{schedtest.Node("bare", nil), capable})

	pod := schedtest.Pod("p", nil, 0)
	if got := schedtest.Filter(Plugin{}, snap, pod); got["bare"] != "" || got["capable"] != "" {
		t.Errorf("a pod needing no feature: %v", got)
	}
	pod.Spec.HostNetwork, pod.Spec.HostUsers = true, ptr.To(false)
	if got := schedtest.Filter(Plugin{}, snap, pod); got["bare"] != ErrReason || got["capable"] != "" {
		t.Errorf("a pod needing UserNamespacesHostNetworkSupport: %v, want bare refused with %q", got, ErrReason)
	}
	restarting := schedtest.Pod("r", nil, 0)
	restarting.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers}}
	if got := schedtest.Filter(Plugin{}, snap, restarting); got["bare"] != ErrReason || got["capable"] != ErrReason {
		t.Errorf("a pod needing RestartAllContainersOnContainerExits, declared nowhere: %v", got)
	}
}
