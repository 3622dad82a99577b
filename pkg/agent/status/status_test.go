package status

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodPhase(t *testing.T) {
	// Statuses of the containers "a" and "b", in spec order.
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	creating := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	exited := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	backingOff := corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}},
	}
	// Removed by a restart of all the pod's containers, waiting to run again.
	removed := corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: RestartingAllContainers, ExitCode: 137}},
	}
	// a restarts on exit code 42 only, whatever the pod's policy.
	restartOn42 := corev1.Container{Name: "a", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyNever),
		RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}
	always := corev1.Container{Name: "a", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}
	for _, tc := range []struct {
		name     string
		policy   corev1.RestartPolicy
		a        *corev1.Container // the spec of a, when not the plain one
		statuses []corev1.ContainerStatus
		terminal bool
		want     corev1.PodPhase
	}{
		{"one still creating", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{running, creating}, false, corev1.PodPending},
		{"all running", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{running, running}, false, corev1.PodRunning},
		{"one running one exited", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{running, exited(1)}, false, corev1.PodRunning},
		{"crash loop", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{backingOff}, false, corev1.PodRunning},
		{"always, all exited", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{exited(0)}, false, corev1.PodRunning},
		{"never, all succeeded", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{exited(0), exited(0)}, false, corev1.PodSucceeded},
		{"never, one failed", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{exited(0), exited(2)}, false, corev1.PodFailed},
		{"on failure, succeeded", corev1.RestartPolicyOnFailure, nil, []corev1.ContainerStatus{exited(0)}, false, corev1.PodSucceeded},
		{"on failure, failed restarts", corev1.RestartPolicyOnFailure, nil, []corev1.ContainerStatus{exited(1)}, false, corev1.PodRunning},
		{"always, but ending", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{exited(0), exited(0)}, true, corev1.PodSucceeded},
		{"on failure, failed but ending", corev1.RestartPolicyOnFailure, nil, []corev1.ContainerStatus{exited(1)}, true, corev1.PodFailed},
		// Container-level restart policies and rules (ContainerRestartRules).
		{"never, rule matches the exit code", corev1.RestartPolicyNever, &restartOn42, []corev1.ContainerStatus{exited(42), exited(0)}, false, corev1.PodRunning},
		{"never, rule matched, backing off", corev1.RestartPolicyNever, &restartOn42, []corev1.ContainerStatus{{
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 42}},
		}, exited(0)}, false, corev1.PodRunning},
		{"never, rule does not match", corev1.RestartPolicyNever, &restartOn42, []corev1.ContainerStatus{exited(1), exited(0)}, false, corev1.PodFailed},
		{"always, container never, rule does not match", corev1.RestartPolicyAlways, &restartOn42, []corev1.ContainerStatus{exited(1), exited(0)}, false, corev1.PodRunning},
		{"on failure, container never, none restarts", corev1.RestartPolicyOnFailure, &restartOn42, []corev1.ContainerStatus{exited(1), exited(0)}, false, corev1.PodFailed},
		{"never, container always", corev1.RestartPolicyNever, &always, []corev1.ContainerStatus{exited(0), exited(0)}, false, corev1.PodRunning},
		{"never, removed by RestartAllContainers", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{removed, removed}, false, corev1.PodRunning},
		{"never, removed by RestartAllContainers, ending", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{removed, removed}, true, corev1.PodFailed},
		{"never, container always, ending", corev1.RestartPolicyNever, &always, []corev1.ContainerStatus{exited(0), exited(0)}, true, corev1.PodSucceeded},
	} {
		spec := corev1.PodSpec{RestartPolicy: tc.policy, Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}[:len(tc.statuses)]}
		if tc.a != nil {
			spec.Containers[0] = *tc.a
		}
		statuses := slices.Clone(tc.statuses)
		for i := range statuses {
			statuses[i].Name = spec.Containers[i].Name
		}
		if got := Phase(&spec, nil, statuses, tc.terminal); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestPodPhaseCountsSidecars: a running sidecar keeps the pod Running after its app
// containers have finished, until it is stopped too; a sidecar not started yet keeps it
// Pending; a stopped or restarting one does not count; a container without a status keeps
// the pod Pending (the kubelet's getPhase).
func TestPodPhaseCountsSidecars(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	exited := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	restarting := corev1.ContainerStatus{Name: "side", State: waiting, LastTerminationState: exited(1)}
	spec := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "setup"}, {Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
		Containers:     []corev1.Container{{Name: "app"}}}
	setup := corev1.ContainerStatus{Name: "setup", State: exited(0)}
	for _, tc := range []struct {
		name     string
		side     corev1.ContainerStatus
		app      []corev1.ContainerStatus
		terminal bool
		want     corev1.PodPhase
	}{
		{"app done, sidecar running", corev1.ContainerStatus{Name: "side", State: running}, []corev1.ContainerStatus{{Name: "app", State: exited(0)}}, false, corev1.PodRunning},
		{"app failed, sidecar running", corev1.ContainerStatus{Name: "side", State: running}, []corev1.ContainerStatus{{Name: "app", State: exited(1)}}, false, corev1.PodRunning},
		{"app done, sidecar running, ending", corev1.ContainerStatus{Name: "side", State: running}, []corev1.ContainerStatus{{Name: "app", State: exited(0)}}, true, corev1.PodRunning},
		{"app done, sidecar stopped", corev1.ContainerStatus{Name: "side", State: exited(143)}, []corev1.ContainerStatus{{Name: "app", State: exited(0)}}, false, corev1.PodSucceeded},
		{"app failed, sidecar stopped", corev1.ContainerStatus{Name: "side", State: exited(0)}, []corev1.ContainerStatus{{Name: "app", State: exited(2)}}, false, corev1.PodFailed},
		{"app done, sidecar restarting", restarting, []corev1.ContainerStatus{{Name: "app", State: exited(0)}}, false, corev1.PodSucceeded},
		{"sidecar not started", corev1.ContainerStatus{Name: "side", State: waiting}, []corev1.ContainerStatus{{Name: "app", State: waiting}}, false, corev1.PodPending},
		{"app without a status", corev1.ContainerStatus{Name: "side", State: running}, nil, false, corev1.PodPending},
	} {
		if got := Phase(spec, []corev1.ContainerStatus{setup, tc.side}, tc.app, tc.terminal); got != tc.want {
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
		SetConditions(&s, now, 1, true, tc.uninitialized, &corev1.PodSpec{})
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
	SetConditions(&s, now, 1, true, nil, &corev1.PodSpec{ReadinessGates: gates})
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
	SetConditions(&s, now, 1, true, nil, &corev1.PodSpec{ReadinessGates: gates})
	if c := Condition(&s, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready with both gates True = %+v", c)
	}
}

// TestUnreadyContainersAsTheKubeletNamesThem: ContainersReady and Ready name the sidecars,
// then the app containers, each in the spec's order (the kubelet's
// GenerateContainersReadyCondition), whatever order the statuses are in (the kubelet sorts
// app containers' statuses by name); a regular init container never counts, running or
// not, and a container without a status is named apart.
func TestUnreadyContainersAsTheKubeletNamesThem(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup"}, {Name: "side", RestartPolicy: &always}, {Name: "proxy", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "zeta"}, {Name: "alpha"}, {Name: "mid"}},
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	s := corev1.PodStatus{Phase: corev1.PodRunning,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup", State: running}, {Name: "side", State: waiting}, {Name: "proxy", State: running, Ready: true}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "alpha", State: running}, {Name: "zeta", State: waiting}}}
	SetConditions(&s, metav1.Now(), 1, true, nil, spec)
	want := "containers with unknown status: [mid], containers with unready status: [side zeta alpha]"
	for _, typ := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		if c := Condition(&s, typ); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" || c.Message != want {
			t.Errorf("%s = %+v, want False ContainersNotReady %q", typ, c, want)
		}
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
	SetConditions(&s, now, 1, true, nil, &corev1.PodSpec{})
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
		SetConditions(&s, now, 1, false, nil, &corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
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
	SetConditions(&s, metav1.Now(), 3, true, nil, &corev1.PodSpec{})
	for _, c := range s.Conditions {
		if c.ObservedGeneration != 3 {
			t.Errorf("condition %s observedGeneration %d, want 3", c.Type, c.ObservedGeneration)
		}
	}
	if len(s.Conditions) != 5 {
		t.Errorf("conditions %+v", s.Conditions)
	}
}
