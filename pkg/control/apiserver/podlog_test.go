package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLogContainer checks the container choice and kube-apiserver's messages for
// pods/log: they reach users of raw API calls and older clients.
func TestLogContainer(t *testing.T) {
	pod := func(statuses ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}, InitContainers: []corev1.Container{{Name: "init"}}},
			Status: corev1.PodStatus{ContainerStatuses: statuses}}
	}
	running := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	waiting := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}
	restarted := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}
	defaulted := pod(running)
	defaulted.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "a"}
	unbound := pod(running)
	unbound.Spec.NodeName = ""
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		container string
		previous  bool
		want      string // container, or the error's text
	}{
		{"named", pod(running), "a", false, "a"},
		{"default-container annotation", defaulted, "", false, "a"},
		{"several and none named", pod(running), "", false, "a container name must be specified for pod web, choose one of: [a b] or one of the init containers: [init]"},
		{"unknown", pod(running), "z", false, "container z is not valid for pod web"},
		{"not started", pod(waiting), "a", false, `container "a" in pod "web" is waiting to start: ImagePullBackOff`},
		{"no status yet", pod(), "a", false, `container "a" in pod "web" is waiting to start: ContainerCreating`},
		{"previous without a restart", pod(running), "a", true, `previous terminated container "a" in pod "web" not found`},
		{"previous", pod(restarted), "a", true, "a"},
		{"unscheduled", unbound, "a", false, "pod web does not have a host assigned"},
	} {
		got, err := logContainer(tc.pod, tc.container, tc.previous)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
