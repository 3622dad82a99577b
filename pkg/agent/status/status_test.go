package status

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodPhase(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	creating := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	exited := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	backingOff := corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}},
	}
	for _, tc := range []struct {
		name     string
		policy   corev1.RestartPolicy
		statuses []corev1.ContainerStatus
		want     corev1.PodPhase
	}{
		{"one still creating", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running, creating}, corev1.PodPending},
		{"all running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running, running}, corev1.PodRunning},
		{"one running one exited", corev1.RestartPolicyNever, []corev1.ContainerStatus{running, exited(1)}, corev1.PodRunning},
		{"crash loop", corev1.RestartPolicyAlways, []corev1.ContainerStatus{backingOff}, corev1.PodRunning},
		{"always, all exited", corev1.RestartPolicyAlways, []corev1.ContainerStatus{exited(0)}, corev1.PodRunning},
		{"never, all succeeded", corev1.RestartPolicyNever, []corev1.ContainerStatus{exited(0), exited(0)}, corev1.PodSucceeded},
		{"never, one failed", corev1.RestartPolicyNever, []corev1.ContainerStatus{exited(0), exited(2)}, corev1.PodFailed},
		{"on failure, succeeded", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{exited(0)}, corev1.PodSucceeded},
		{"on failure, failed restarts", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{exited(1)}, corev1.PodRunning},
	} {
		if got := Phase(tc.policy, tc.statuses); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestInitializedIsHonest: a pod whose init containers are not done is not Initialized,
// and the condition names them.
func TestInitializedIsHonest(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		uninitialized []string
		want          corev1.ConditionStatus
		message       string
	}{
		{nil, corev1.ConditionTrue, ""},
		{[]string{"setup", "migrate"}, corev1.ConditionFalse, "containers with incomplete status: [setup migrate]"},
	} {
		var s corev1.PodStatus
		SetConditions(&s, now, 1, true, tc.uninitialized, nil)
		c := Condition(&s, corev1.PodInitialized)
		if c == nil || c.Status != tc.want || c.Message != tc.message {
			t.Errorf("init containers %v: Initialized %+v, want %s %q", tc.uninitialized, c, tc.want, tc.message)
		}
	}
}

// TestReadinessGates: a running, ready pod is Ready only once every readiness gate's
// condition (set by someone else) is True; ContainersReady does not wait for them.
func TestReadinessGates(t *testing.T) {
	now := metav1.Now()
	gates := []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	s := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: "example.com/dns", Status: corev1.ConditionFalse}}}
	SetConditions(&s, now, 1, true, nil, gates)
	ready := Condition(&s, corev1.PodReady)
	want := `corresponding condition of pod readiness gate "example.com/lb" does not exist., the status of pod readiness gate "example.com/dns" is not "True", but False`
	if ready.Status != corev1.ConditionFalse || ready.Reason != "ReadinessGatesNotReady" || ready.Message != want {
		t.Errorf("Ready = %+v", ready)
	}
	if c := Condition(&s, corev1.ContainersReady); c.Status != corev1.ConditionTrue {
		t.Errorf("ContainersReady = %+v, want True", c)
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue})
	Condition(&s, "example.com/dns").Status = corev1.ConditionTrue
	SetConditions(&s, now, 1, true, nil, gates)
	if c := Condition(&s, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready with both gates True = %+v", c)
	}
}

// TestConditionOrder: the kubelet writes the conditions others own first, then its own
// in its order (PodReadyToStartContainers, Initialized, Ready, ContainersReady,
// PodScheduled), whatever order the pod had them in: `kubectl describe pod` and
// `-o yaml` list them so.
func TestConditionOrder(t *testing.T) {
	now := metav1.Now()
	s := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: "example.com/lb", Status: corev1.ConditionTrue}}}
	SetConditions(&s, now, 1, true, nil, nil)
	s = WithTheirConditions(s, corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: "example.com/lb", Status: corev1.ConditionTrue}}})
	var got []string
	for _, c := range s.Conditions {
		got = append(got, string(c.Type))
	}
	want := "example.com/lb PodReadyToStartContainers Initialized Ready ContainersReady PodScheduled"
	if strings.Join(got, " ") != want {
		t.Errorf("conditions in order %v, want %s", got, want)
	}
}

// A DisruptionTarget the node sets goes in with the failed phase (an eviction); while the
// pod runs, the API's (the scheduler's preemption, say) stays whatever ours says.
func TestOurDisruptionTargetAsThePodFails(t *testing.T) {
	ours := corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonTerminationByKubelet}}}
	current := corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}}}
	got := WithTheirConditions(ours, current)
	if len(got.Conditions) != 1 || got.Conditions[0].Reason != corev1.PodReasonTerminationByKubelet {
		t.Errorf("failed pod's conditions %+v, want our DisruptionTarget once", got.Conditions)
	}
	ours.Phase = corev1.PodRunning
	got = WithTheirConditions(ours, current)
	if len(got.Conditions) != 1 || got.Conditions[0].Reason != "PreemptionByScheduler" {
		t.Errorf("running pod's conditions %+v, want the API's DisruptionTarget", got.Conditions)
	}
}

// A finished pod's conditions as the kubelet's generate.go words them: a failed pod is not
// Ready with reason PodFailed (no message: its containers may still be stopping), a
// succeeded one with PodCompleted, and a succeeded pod is Initialized with PodCompleted.
func TestConditionsOfAFinishedPod(t *testing.T) {
	now := metav1.Now()
	exited := corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}
	for _, tc := range []struct {
		phase                 corev1.PodPhase
		ready, initializedWhy string
	}{
		{corev1.PodFailed, "PodFailed", ""},
		{corev1.PodSucceeded, "PodCompleted", "PodCompleted"},
	} {
		s := corev1.PodStatus{Phase: tc.phase, ContainerStatuses: []corev1.ContainerStatus{exited}}
		SetConditions(&s, now, 1, false, nil, nil)
		for _, typ := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
			if c := Condition(&s, typ); c.Status != corev1.ConditionFalse || c.Reason != tc.ready || c.Message != "" {
				t.Errorf("%s pod: %s = %+v, want False %s without a message", tc.phase, typ, c, tc.ready)
			}
		}
		if c := Condition(&s, corev1.PodInitialized); c.Status != corev1.ConditionTrue || c.Reason != tc.initializedWhy {
			t.Errorf("%s pod: Initialized = %+v, want True %q", tc.phase, c, tc.initializedWhy)
		}
	}
}

// TestConditionsObserveTheGeneration: every condition the kubelet owns, and the scheduler's
// PodScheduled, carries the pod's generation, as the kubelet's since 1.35.
func TestConditionsObserveTheGeneration(t *testing.T) {
	s := corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: 1}}}
	SetConditions(&s, metav1.Now(), 3, true, nil, nil)
	for _, c := range s.Conditions {
		if c.ObservedGeneration != 3 {
			t.Errorf("condition %s observedGeneration %d, want 3", c.Type, c.ObservedGeneration)
		}
	}
	if len(s.Conditions) != 5 {
		t.Errorf("conditions %+v", s.Conditions)
	}
}
