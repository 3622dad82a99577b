package restartpolicy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestContainerShouldRestart: a container's own restart policy and rules decide over the
// pod's, as the kubelet's ContainerShouldRestart (pkg/api/v1/pod/util.go).
func TestContainerShouldRestart(t *testing.T) {
	rule := func(action corev1.ContainerRestartRuleAction, op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) corev1.ContainerRestartRule {
		return corev1.ContainerRestartRule{Action: action, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
	}
	const (
		restart = corev1.ContainerRestartRuleActionRestart
		in      = corev1.ContainerRestartRuleOnExitCodesOpIn
		notIn   = corev1.ContainerRestartRuleOnExitCodesOpNotIn
	)
	for _, tc := range []struct {
		name      string
		pod       corev1.RestartPolicy
		container *corev1.ContainerRestartPolicy
		rules     []corev1.ContainerRestartRule
		exit      int32
		want      bool
	}{
		{"pod always", corev1.RestartPolicyAlways, nil, nil, 0, true},
		{"pod on failure, success", corev1.RestartPolicyOnFailure, nil, nil, 0, false},
		{"pod on failure, failure", corev1.RestartPolicyOnFailure, nil, nil, 1, true},
		{"pod never", corev1.RestartPolicyNever, nil, nil, 1, false},
		{"pod never, container always", corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyAlways), nil, 0, true},
		{"pod never, container on failure", corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyOnFailure), nil, 3, true},
		{"pod always, container never", corev1.RestartPolicyAlways, ptr.To(corev1.ContainerRestartPolicyNever), nil, 1, false},
		{"pod always, container on failure, success", corev1.RestartPolicyAlways, ptr.To(corev1.ContainerRestartPolicyOnFailure), nil, 0, false},
		{"exit code in", corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule(restart, in, 42, 43)}, 43, true},
		{"exit code not in the In list", corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule(restart, in, 42)}, 1, false},
		{"exit code not in", corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule(restart, notIn, 0)}, 1, true},
		{"exit code in the NotIn list", corev1.RestartPolicyAlways, ptr.To(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule(restart, notIn, 0)}, 0, false},
		{"no rule matches: the container's policy", corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyOnFailure), []corev1.ContainerRestartRule{rule(restart, in, 42)}, 1, true},
		{"a later rule matches", corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule(restart, in, 1), rule(restart, in, 2)}, 2, true},
		{"rules without a policy of its own are not read", corev1.RestartPolicyNever, nil, []corev1.ContainerRestartRule{rule(restart, in, 42)}, 42, false},
		{"RestartAllContainers runs it again", corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyNever), []corev1.ContainerRestartRule{rule(corev1.ContainerRestartRuleActionRestartAllContainers, in, 42)}, 42, true},
	} {
		spec := corev1.PodSpec{RestartPolicy: tc.pod}
		c := corev1.Container{Name: "app", RestartPolicy: tc.container, RestartPolicyRules: tc.rules}
		if got := ContainerShouldRestart(&spec, &c, tc.exit); got != tc.want {
			t.Errorf("%s: restarts after exit %d: %v, want %v", tc.name, tc.exit, got, tc.want)
		}
	}
}
