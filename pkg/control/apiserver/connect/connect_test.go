package connect

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
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
			{Name: "crasher", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}},
			{Name: "puller", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
		}}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "crasher"}, corev1.Container{Name: "puller"}, corev1.Container{Name: "new"})
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}}}
	for _, tc := range []struct {
		name, sub string
		previous  bool
		want      string // container, or the start of the error
	}{
		{"app", "log", false, "app"},
		// Every container is named, init and ephemeral ones too, as kube's validateContainer.
		{"", "log", false, "a container name must be specified for pod web, choose one of: [setup app sidecar crasher puller new debugger]"},
		{"", "exec", false, "a container name must be specified for pod web, choose one of: [setup app sidecar crasher puller new debugger]"},
		{"db", "log", false, "container db is not valid for pod web"},
		{"sidecar", "log", false, `container "sidecar" in pod "web" is waiting to start: ContainerCreating`},
		{"sidecar", "log", true, "sidecar"},
		// A crash-looping container's last run has logs (the kubelet's rule). Exec and
		// attach go to the node, which answers for what runs (kube-apiserver checks no
		// status: kubectl says "unable to upgrade connection: container not found").
		{"crasher", "log", false, "crasher"},
		{"crasher", "exec", false, "crasher"},
		{"sidecar", "attach", false, "sidecar"},
		{"puller", "log", false, `container "puller" in pod "web" is waiting to start: trying and failing to pull image`},
		{"new", "log", false, "new"}, // no status yet: the node answers
	} {
		got, err := podContainer(pod, tc.name, tc.sub, tc.previous)
		if err != nil {
			if !apierrors.IsBadRequest(err) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%s of container %q: error %v, want 400 %q", tc.sub, tc.name, err, tc.want)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("container %q: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A pod without containers (only ephemeral ones could be) has none to choose from.
func TestPodContainerWithoutContainers(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	_, err := podContainer(pod, "", "log", false)
	if want := "a container name must be specified for pod web"; !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("got %v, want 400 %q", err, want)
	}
}

// The node API's plain-text errors reach the client as a Status with their text, as
// kube-apiserver hands on the kubelet's.
func TestNodeErrorIsAStatus(t *testing.T) {
	for _, tc := range []struct {
		code        int
		contentType string
		body        string
		wantReason  metav1.StatusReason // "" : passed on as it is
		upgrade     bool                // an exec or attach over SPDY
	}{
		{http.StatusBadRequest, "text/plain; charset=utf-8", "previous terminated container \"b\" in pod \"logger\" not found\n", metav1.StatusReasonBadRequest, false},
		{http.StatusNotFound, "text/plain; charset=utf-8", "container \"x\" not found in pod default/p\n", metav1.StatusReasonNotFound, false},
		{http.StatusInternalServerError, "text/plain", "log of container c: disk gone", metav1.StatusReasonInternalError, false},
		{http.StatusOK, "text/plain", "a log line\n", "", false},
		{http.StatusBadRequest, "application/json", `{"kind":"Status"}`, "", false},
		// A refused upgrade passes as it is, as kube-apiserver's upgrade-aware proxy passes
		// the kubelet's: kubectl prints "unable to upgrade connection: container not found".
		{http.StatusInternalServerError, "text/plain; charset=utf-8", "container not found (\"c\")\n", "", true},
	} {
		req := httptest.NewRequest(http.MethodPost, "/exec/default/p/c", nil)
		if tc.upgrade {
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "SPDY/3.1")
		}
		resp := &http.Response{StatusCode: tc.code, Header: http.Header{"Content-Type": {tc.contentType}}, Body: io.NopCloser(strings.NewReader(tc.body)), Request: req}
		nodeErr := nodeError(resp)
		if tc.wantReason == "" {
			data, _ := io.ReadAll(resp.Body)
			if nodeErr != nil || string(data) != tc.body {
				t.Errorf("%d %s: %v, body %s; want it passed on as it is", tc.code, tc.contentType, nodeErr, data)
			}
			continue
		}
		// What the client gets: the proxy's ErrorHandler writes the error.
		w := httptest.NewRecorder()
		responsewriters.WriteError(w, nodeErr)
		data := w.Body.Bytes()
		if st := apitest.ResponseStatus(t, data); st.Reason != tc.wantReason || int(st.Code) != tc.code || w.Code != tc.code ||
			!strings.Contains(st.Message, strings.TrimSpace(tc.body)) || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%d %q: %s, want a %s Status carrying the text", tc.code, tc.body, data, tc.wantReason)
		}
	}
}
