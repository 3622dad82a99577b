package nodefeatures

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// minilet declares, as a 1.36 kubelet with default gates would, only the features it
// carries out: pod-level resize and non-sidecar init container resize. Not
// restart-all-containers rules, WebSockets served by the node, nor user namespaces.
func TestDeclared(t *testing.T) {
	want := []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}
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
	if ok, reason, message := (Admission{}).Admit(plain); !ok {
		t.Errorf("plain pod refused: %s: %s", reason, message)
	}
	ok, reason, message := Admission{}.Admit(restartAll)
	if ok || reason != "PodFeatureUnsupported" || message != "Pod requires node features that are not available: RestartAllContainersOnContainerExits" {
		t.Errorf("pod with a RestartAllContainers rule: admitted %v, %q %q", ok, reason, message)
	}
}
