package prober

import (
	"context"
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
// container" (and no more is said); an app container that will not restart while no other
// runs ends the pod, which the kubelet kills with its plain "Stopping container X".
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
		othersRun bool
		want      string
		podEnds   bool
	}{
		{corev1.RestartPolicyAlways, "app", probe.Liveness, false, "Container app failed liveness probe, will be restarted", false},
		{corev1.RestartPolicyOnFailure, "app", probe.Startup, false, "Container app failed startup probe, will be restarted", false},
		{corev1.RestartPolicyNever, "app", probe.Liveness, true, "Container app failed liveness probe", false},
		{corev1.RestartPolicyNever, "app", probe.Liveness, false, "Stopping container app", true},
		{corev1.RestartPolicyAlways, "proxy", probe.Startup, false, "Init container proxy failed startup probe", false},
		{corev1.RestartPolicyNever, "proxy", probe.Liveness, false, "Init container proxy failed liveness probe", false},
		{corev1.RestartPolicyAlways, "once", probe.Liveness, true, "Container once failed liveness probe", false},
		{corev1.RestartPolicyAlways, "once", probe.Liveness, false, "Stopping container once", true},
		{corev1.RestartPolicyNever, "retried", probe.Liveness, false, "Container retried failed liveness probe, will be restarted", false},
	} {
		got, podEnds := killMessage(pod(tc.policy), tc.container, tc.kind, tc.othersRun)
		if got != tc.want || podEnds != tc.podEnds {
			t.Errorf("%s %s %s, others running %v: %q (pod ends %v), want %q (%v)", tc.policy, tc.container, tc.kind, tc.othersRun, got, podEnds, tc.want, tc.podEnds)
		}
	}
}

// kills records the containers killed and the grace periods they were given.
type kills []string

func (k *kills) Exec(string) probe.Execer { return nil }

func (k *kills) Kill(_ context.Context, _ *corev1.Pod, container, _ string, grace *int64) error {
	*k = append(*k, fmt.Sprintf("%s grace %v", container, ptr.Deref(grace, -1)))
	return nil
}

// TestLivenessFailureEndingThePod: a restartPolicy Never pod's container failing its
// liveness probe, no other container running, is stopped as the kubelet kills the pod:
// "Stopping container app" in the pod's grace period, not the probe's; beside another
// running container it is killed alone, in the probe's.
func TestLivenessFailureEndingThePod(t *testing.T) {
	for _, tc := range []struct {
		othersRun bool
		event     string
		kill      string
	}{
		{false, "app Normal Killing: Stopping container app", "app grace -1"},
		{true, "app Normal Killing: Container app failed liveness probe", "app grace 1"},
	} {
		var events recordedEvents
		var killed kills
		m := New(Config{Events: &events, Containers: &killed, Wake: func(types.UID) {}})
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app"}, {Name: "other"}}}}
		running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		statuses := []corev1.ContainerStatus{{Name: "app", State: running}, {Name: "other", State: running}}
		if !tc.othersRun {
			statuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
		}
		m.Sync(pod, nil, statuses)
		k := key{pod.UID, "app", probe.Liveness}
		m.report(t.Context(), k, pod, &pod.Spec.Containers[0], &corev1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](1)}, "c1",
			probe.Failure, "", probe.Failure, true)
		m.wg.Wait()
		if want := []string{"app Warning Unhealthy: Liveness probe failed: ", tc.event}; !slices.Equal(events, want) {
			t.Errorf("others running %v: events %q, want %q", tc.othersRun, events, want)
		}
		if want := []string{tc.kill}; !slices.Equal(killed, want) {
			t.Errorf("others running %v: killed %q, want %q", tc.othersRun, killed, want)
		}
	}
}

type recordedEvents []string

func (r *recordedEvents) ContainerEvent(_ *corev1.Pod, container, eventType, reason, format string, args ...any) {
	*r = append(*r, fmt.Sprintf("%s %s %s: %s", container, eventType, reason, fmt.Sprintf(format, args...)))
}

// TestProbeResultEvents: the events of a probe that neither plainly succeeds nor fails, as
// the kubelet's prober words them: one that could not run (an exec probe whose command
// the runtime could not start) is a Warning Unhealthy "Liveness probe errored and resulted
// in unknown state: ..." and counts neither way; an HTTP probe that ends on a redirect it
// does not follow succeeds with a Warning ProbeWarning "Readiness probe warning: ...".
func TestProbeResultEvents(t *testing.T) {
	for _, tc := range []struct {
		kind            probe.Kind
		result, current probe.Result
		changed         bool // the probe's result flipped (a readiness probe's first success)
		output, event   string
	}{
		{probe.Liveness, probe.Unknown, probe.Success, false, "container not running",
			"app Warning Unhealthy: Liveness probe errored and resulted in unknown state: container not running"},
		{probe.Readiness, probe.Warning, probe.Success, true, "Probe terminated redirects, Response body: moved",
			"app Warning ProbeWarning: Readiness probe warning: Probe terminated redirects, Response body: moved"},
	} {
		var events recordedEvents
		m := New(Config{Events: &events, Wake: func(types.UID) {}})
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
		k := key{pod.UID, "app", tc.kind}
		m.report(t.Context(), k, pod, &pod.Spec.Containers[0], &corev1.Probe{}, "c1", tc.result, tc.output, tc.current, tc.changed)
		if want := []string{tc.event}; !slices.Equal(events, want) {
			t.Errorf("%v: events %q, want %q", tc.result, events, want)
		}
		if tc.result == probe.Warning && !m.Ready(pod.UID, &corev1.Container{Name: "app", ReadinessProbe: &corev1.Probe{}}) {
			t.Error("a probe with a warning left the container unready")
		}
	}
}
