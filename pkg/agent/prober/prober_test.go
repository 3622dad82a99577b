package prober

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/probe"
)

// TestKillMessage: the Killing event of a container that failed its liveness or startup
// probe is worded as the kubelet's computePodActions and computeInitContainerActions word
// it: an app container "will be restarted" unless its restartPolicy, or else the pod's, is
// Never (its restartPolicyRules are not read: it has not exited), a sidecar is an "Init
// container" (and no more is said).
func TestKillMessage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := func(policy corev1.RestartPolicy) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{
			RestartPolicy:  policy,
			InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: ptr.To(always)}},
			Containers: []corev1.Container{{Name: "app"},
				{Name: "once", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyNever)},
				{Name: "retried", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyOnFailure), RestartPolicyRules: []corev1.ContainerRestartRule{{
					Action:    corev1.ContainerRestartRuleActionRestart,
					ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{137}},
				}}},
			},
		}}
	}
	for _, tc := range []struct {
		policy    corev1.RestartPolicy
		container string
		kind      probe.Kind
		want      string
	}{
		{corev1.RestartPolicyAlways, "app", probe.Liveness, "Container app failed liveness probe, will be restarted"},
		{corev1.RestartPolicyOnFailure, "app", probe.Startup, "Container app failed startup probe, will be restarted"},
		{corev1.RestartPolicyNever, "app", probe.Liveness, "Container app failed liveness probe"},
		{corev1.RestartPolicyAlways, "proxy", probe.Startup, "Init container proxy failed startup probe"},
		{corev1.RestartPolicyNever, "proxy", probe.Liveness, "Init container proxy failed liveness probe"},
		{corev1.RestartPolicyAlways, "once", probe.Liveness, "Container once failed liveness probe"},
		{corev1.RestartPolicyNever, "retried", probe.Liveness, "Container retried failed liveness probe, will be restarted"},
	} {
		if got := killMessage(pod(tc.policy), tc.container, tc.kind); got != tc.want {
			t.Errorf("%s %s %s: %q, want %q", tc.policy, tc.container, tc.kind, got, tc.want)
		}
	}
}

type recordedEvents []string

func (r *recordedEvents) ContainerEvent(_ *corev1.Pod, container, eventType, reason, format string, args ...any) {
	*r = append(*r, fmt.Sprintf("%s %s %s: %s", container, eventType, reason, fmt.Sprintf(format, args...)))
}

// TestProbeErrorEvent: a probe that could not run (an exec probe whose command the runtime
// could not start) is a Warning Unhealthy "Liveness probe errored and resulted in unknown
// state: ...", as the kubelet's prober words it, and counts neither way.
func TestProbeErrorEvent(t *testing.T) {
	var events recordedEvents
	m := New(Config{Events: &events, Wake: func(types.UID) {}})
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	k := key{pod.UID, "app", probe.Liveness}
	m.report(t.Context(), k, pod, &pod.Spec.Containers[0], &corev1.Probe{}, "c1", probe.Unknown, "container not running", probe.Success, false)
	want := []string{"app Warning Unhealthy: Liveness probe errored and resulted in unknown state: container not running"}
	if !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}
