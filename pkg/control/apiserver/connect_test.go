package apiserver

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

// The logs of a pod not yet scheduled are empty (kube-apiserver's LogLocation has no
// location for it, a null stream answered 204 No Content: kubectl logs prints nothing and
// succeeds), once its container is checked; exec and attach are refused.
func TestLogsOfAnUnscheduledPod(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("pending", "web")); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	w := do(t, h, "GET", "/api/v1/namespaces/default/pods/pending/log", nil)
	if w.Code != http.StatusNoContent || w.Body.Len() != 0 {
		t.Errorf("logs of an unscheduled pod: %d %q, want 204 and nothing", w.Code, w.Body)
	}
	w = do(t, h, "GET", "/api/v1/namespaces/default/pods/pending/log?container=db", nil)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "container db is not valid for pod pending") {
		t.Errorf("logs of a container the pod does not have: %d %s", w.Code, w.Body)
	}
	w = do(t, h, "POST", "/api/v1/namespaces/default/pods/pending/exec?command=true&stdout=true", nil)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "pod pending does not have a host assigned") {
		t.Errorf("exec in an unscheduled pod: %d %s", w.Code, w.Body)
	}
}

// pods/log options are validated as kube-apiserver's LogREST validates them, before the
// pod is read: `kubectl logs --since=400ms` (sent as sinceSeconds=0) is a 422 naming the
// field, not the node's own wording.
func TestLogOptionsValidated(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("pending", "web")); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct{ pod, query, want string }{
		{"pending", "sinceSeconds=0", `PodLogOptions "pending" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0`},
		{"pending", "tailLines=-2", `PodLogOptions "pending" is invalid: tailLines: Invalid value: -2: must be greater than or equal to 0`},
		{"pending", "limitBytes=0", `PodLogOptions "pending" is invalid: limitBytes: Invalid value: 0: must be greater than 0`},
		{"pending", "sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", "PodLogOptions \"pending\" is invalid: []: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"},
		// The PodLogsQuerySplitStreams feature is alpha, off by default in v1.36.
		{"pending", "stream=Stdout", `PodLogOptions "pending" is invalid: stream: Forbidden: may not be specified`},
		// Before the pod is looked up.
		{"absent", "tailLines=-1&limitBytes=-1", `PodLogOptions "absent" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: -1: must be greater than 0]`},
	} {
		w := do(t, h, "GET", "/api/v1/namespaces/default/pods/"+tc.pod+"/log?"+tc.query, nil)
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Message != tc.want {
			t.Errorf("GET log?%s: %d %s\nwant 422 %q", tc.query, w.Code, w.Body, tc.want)
		}
	}
	w := do(t, h, "GET", "/api/v1/namespaces/default/pods/pending/log?tailLines=x", nil)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `parsing \"x\": invalid syntax`) {
		t.Errorf("GET log?tailLines=x: %d %s, want 400 naming the value", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/api/v1/namespaces/default/pods/pending/log?tailLines=3&sinceSeconds=1&limitBytes=1", nil); w.Code != http.StatusNoContent {
		t.Errorf("GET log with valid options: %d %s, want 204 (pod not scheduled)", w.Code, w.Body)
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
