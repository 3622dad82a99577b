// Package restartpolicy says whether a container runs again after it exits, by its own
// restart policy and rules or its pod's, as Kubernetes' pkg/api/v1/pod does for the
// kubelet and the API server (which refuses a status bringing back a container that
// stays terminated).
package restartpolicy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ContainerShouldRestart is kube's (pkg/api/v1/pod/util.go, with ContainerRestartRules
// on as kube 1.35+ has it): whether container c of a pod with spec runs again after exiting
// with exitCode. With a restartPolicy of its own, its first restartPolicyRule matching the
// code decides (Restart, or RestartAllContainers: it runs again with all the others),
// else its restartPolicy; without, the pod's restartPolicy.
func ContainerShouldRestart(spec *corev1.PodSpec, c *corev1.Container, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if _, ok := matchingRule(c, exitCode); ok {
			return true // both actions restart it
		}
		switch *c.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case corev1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// RestartsAllContainers: c's first restartPolicyRule matching exitCode restarts all the
// pod's containers (the kubelet's ShouldAllContainersRestart, for one container's exit).
func RestartsAllContainers(c *corev1.Container, exitCode int32) bool {
	rule, ok := matchingRule(c, exitCode)
	return ok && rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers
}

// matchingRule is the first of c's restartPolicyRules whose exitCodes match exitCode
// (the kubelet's FindMatchingContainerRestartRule).
func matchingRule(c *corev1.Container, exitCode int32) (corev1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := slices.Contains(rule.ExitCodes.Values, exitCode)
		switch rule.ExitCodes.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return corev1.ContainerRestartRule{}, false
}

// AnyRestartsAll: a container of the pod has a RestartAllContainers rule, so any of them
// may run again (kube's AllContainersCouldRestart).
func AnyRestartsAll(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, rule := range c.RestartPolicyRules {
				if rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}
