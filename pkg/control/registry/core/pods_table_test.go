package core

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The READY, STATUS and RESTARTS of `kubectl get pods` are kube-apiserver's printPod's.
func TestPodTableColumns(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	exited := func(code int32, reason string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
	}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	restarted := metav1.NewTime(time.Now().Add(-time.Minute))
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, Reason: reason}
	}
	withSidecar := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}, {Name: "side", RestartPolicy: always}},
		Containers:     []corev1.Container{{Name: "main"}},
	}
	for _, tc := range []struct {
		name                    string
		pod                     corev1.Pod
		ready, status, restarts string
	}{
		{
			name: "a started sidecar counts among the ready containers",
			pod: corev1.Pod{Spec: withSidecar, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{cond(corev1.PodInitialized, corev1.ConditionTrue, ""), cond(corev1.PodReady, corev1.ConditionTrue, "")},
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: exited(0, "Completed")},
					{Name: "side", State: running, Started: ptr.To(true), Ready: true, RestartCount: 2,
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: restarted}}}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: running, Ready: true}}}},
			ready: "2/2", status: "Running", restarts: "2 (60s ago)",
		},
		{
			name: "the first init container still running",
			pod: corev1.Pod{Spec: withSidecar, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: running}, {Name: "side", State: waiting("PodInitializing")}},
				ContainerStatuses:     []corev1.ContainerStatus{{Name: "main", State: waiting("PodInitializing")}}}},
			ready: "0/2", status: "Init:0/2", restarts: "0",
		},
		{
			name: "a crashing init container",
			pod: corev1.Pod{Spec: withSidecar, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: waiting("CrashLoopBackOff"), RestartCount: 3}}}},
			ready: "0/2", status: "Init:CrashLoopBackOff", restarts: "3",
		},
		{
			name: "scheduling gates",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				Conditions: []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated)}}},
			ready: "0/1", status: "SchedulingGated", restarts: "0",
		},
		{
			name: "one container done, one running but the pod not ready",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: running, Ready: true}, {Name: "b", State: exited(0, "Completed")}}}},
			ready: "1/2", status: "NotReady", restarts: "0",
		},
		{
			name: "one container failed, the last completed",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: exited(2, "Error")}, {Name: "b", State: exited(0, "Completed")}}}},
			ready: "0/2", status: "Error", restarts: "0",
		},
		{
			name: "a finished pod being deleted keeps its phase",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &restarted}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: exited(0, "Completed")}}}},
			ready: "0/1", status: "Completed", restarts: "0",
		},
		{
			name: "a running pod being deleted",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &restarted}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: running, Ready: true}}}},
			ready: "1/1", status: "Terminating", restarts: "0",
		},
	} {
		row := podTable.Row(&tc.pod)
		if row[1] != tc.ready || row[2] != tc.status || row[3] != tc.restarts {
			t.Errorf("%s: READY %v STATUS %v RESTARTS %v, want %s %s %s", tc.name, row[1], row[2], row[3], tc.ready, tc.status, tc.restarts)
		}
	}
}
