package apiserver

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The container checks kube-apiserver makes before it proxies logs and exec to the node.
func TestPodContainer(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "sidecar"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "sidecar", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
		}}}
	for _, tc := range []struct {
		name     string
		previous bool
		want     string // container, or the start of the error
	}{
		{"app", false, "app"},
		{"", false, "a container name must be specified for pod web, choose one of: [app sidecar]"},
		{"db", false, "container db is not valid for pod web"},
		{"sidecar", false, `container "sidecar" in pod "web" is waiting to start: ContainerCreating`},
		{"sidecar", true, "sidecar"},
	} {
		got, err := podContainer(pod, tc.name, tc.previous)
		if err != nil {
			if !apierrors.IsBadRequest(err) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("container %q: error %v, want 400 %q", tc.name, err, tc.want)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("container %q: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// pods/log is proxied to the pod's node: a node that does not exist is named in the error.
func TestConnectWithoutNodeEndpoint(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	runningPod(t, h, "a", true)
	w := do(t, h, "GET", "/api/v1/namespaces/default/pods/a/log", nil)
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `nodes \"node-1\" not found`) {
		t.Fatalf("GET pods/a/log on a missing node: %d %s", w.Code, w.Body)
	}
}
