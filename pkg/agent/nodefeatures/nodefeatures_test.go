package nodefeatures

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// minilet declares, as a 1.36 kubelet with default gates would, only the features it
// carries out: pod-level resize, non-sidecar init container resize and restart-all-containers
// rules. Not WebSockets served by the node, nor user namespaces.
func TestDeclared(t *testing.T) {
	want := []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}
	if got := Declared(); !slices.Equal(got, want) {
		t.Errorf("declared %v, want %v", got, want)
	}
}

// A pod that needs an undeclared feature is refused with the kubelet's
// DeclaredFeaturesAdmitHandler reason and message; others pass.
func TestAdmission(t *testing.T) {
	plain := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	restartAll := plain.DeepCopy()
	restartAll.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	userNSHostNet := plain.DeepCopy()
	userNSHostNet.Spec.HostNetwork, userNSHostNet.Spec.HostUsers = true, ptr.To(false)
	for name, pod := range map[string]*corev1.Pod{"plain pod": plain, "pod with a RestartAllContainers rule": restartAll} {
		if ok, reason, message := (Admission{}).Admit(pod); !ok {
			t.Errorf("%s refused: %s: %s", name, reason, message)
		}
	}
	ok, reason, message := Admission{}.Admit(userNSHostNet)
	if ok || reason != "PodFeatureUnsupported" || message != "Pod requires node features that are not available: UserNamespacesHostNetworkSupport" {
		t.Errorf("hostNetwork pod with hostUsers false: admitted %v, %q %q", ok, reason, message)
	}
}
