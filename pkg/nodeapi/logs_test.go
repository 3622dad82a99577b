package nodeapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/runtime"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// listOnly is a runtime that lists fixed containers.
type listOnly struct {
	Runtime
	containers []runtime.Container
}

func (l listOnly) ListContainers(context.Context, string) ([]runtime.Container, error) {
	return l.containers, nil
}

// `logs --previous` reads the run the pod's status names as the container's last terminated
// state, as the kubelet does: in CrashLoopBackOff the run that just ended (the same the
// plain logs show), once running again the run before; none before the first restart.
func TestPreviousIsTheLastTerminatedRun(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute)
	var runs []runtime.Container
	for i, state := range []runtime.State{runtime.StateExited, runtime.StateExited, runtime.StateRunning} {
		path := filepath.Join(dir, fmt.Sprintf("%d.log", i))
		line := fmt.Sprintf("2026-11-26T00:00:0%dZ stdout F run-%d\n", i, i)
		if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, runtime.Container{ID: fmt.Sprintf("id%d", i), PodNamespace: "default", PodName: "crasher", Name: "c",
			LogPath: path, State: state, StartedAt: start.Add(time.Duration(i) * time.Second)})
	}
	status := func(last string, state corev1.ContainerState) *corev1.Pod {
		cs := corev1.ContainerStatus{Name: "c", State: state}
		if last != "" {
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, ContainerID: "containerd://" + last}
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crasher"},
			Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}}}
	}
	backOff := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, tc := range []struct {
		name           string
		pod            *corev1.Pod
		runs           []runtime.Container
		previous, logs string
	}{
		{"in CrashLoopBackOff after the second run", status("id1", backOff), runs[:2], "run-1", "run-1"},
		{"running its third run", status("id1", running), runs, "run-1", "run-2"},
	} {
		if code, out := logsOfC(tc.pod, tc.runs, true); code != http.StatusOK || out != tc.previous {
			t.Errorf("%s: --previous answered %d %q, want %q", tc.name, code, out, tc.previous)
		}
		if code, out := logsOfC(tc.pod, tc.runs, false); code != http.StatusOK || out != tc.logs {
			t.Errorf("%s: logs answered %d %q, want %q", tc.name, code, out, tc.logs)
		}
	}
	code, out := logsOfC(status("", running), runs[:1], true)
	if code != http.StatusBadRequest || !strings.Contains(out, `previous terminated container "c" in pod "crasher" not found`) {
		t.Errorf("--previous before any restart: %d %q, want 400 naming the container", code, out)
	}
}

// exec, attach and run into a container with no running instance (crash-looping, or
// not in the pod) are answered as the kubelet's GetExec answers them: 500, `container not
// found ("c")`, which kubectl prints as "unable to upgrade connection: container not found".
func TestStreamsNeedARunningContainer(t *testing.T) {
	exited := runtime.Container{ID: "id0", PodNamespace: "default", PodName: "crasher", Name: "c", State: runtime.StateExited}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crasher"}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	creating := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new"}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	s := New(Config{NodeName: "node-1"}, listOnly{containers: []runtime.Container{exited}}, fake.NewClientset(pod, creating), func() error { return nil }, nil, nil)
	for _, tc := range []struct {
		path      string
		container string
		serve     http.HandlerFunc
	}{
		{"/exec/default/crasher/c?command=true&output=1", "c", s.serveExec},
		{"/attach/default/crasher/c?output=1", "c", s.serveAttach},
		{"/run/default/crasher/c?cmd=true", "c", s.serveRun},
		{"/exec/default/crasher/other?command=true&output=1", "other", s.serveExec},
		// A pod whose sandbox is not made yet (ContainerCreating).
		{"/exec/default/new/c?command=true&output=1", "c", s.serveExec},
	} {
		r := httptest.NewRequest(http.MethodPost, tc.path, nil)
		r.SetPathValue("namespace", "default")
		r.SetPathValue("pod", strings.Split(tc.path, "/")[3])
		r.SetPathValue("container", tc.container)
		w := httptest.NewRecorder()
		tc.serve(w, r)
		if want := fmt.Sprintf("container not found (%q)", tc.container); w.Code != http.StatusInternalServerError || strings.TrimSpace(w.Body.String()) != want {
			t.Errorf("%s: %d %q, want 500 %q", tc.path, w.Code, strings.TrimSpace(w.Body.String()), want)
		}
	}
}

// The logs of a container of a pod bound here that has not run yet are answered as the
// kubelet's validateContainerLogStatus answers them from the pod's status: 400, why it
// waits, or that it has no status yet.
func TestLogsOfAContainerNotStarted(t *testing.T) {
	pod := func(statuses ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new"},
			Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c"}}},
			Status: corev1.PodStatus{ContainerStatuses: statuses}}
	}
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		previous bool
		want     string
	}{
		{"no status yet", pod(), false, `container "c" in pod "new" is not available`},
		{"creating", pod(waiting("ContainerCreating")), false, `container "c" in pod "new" is waiting to start: ContainerCreating`},
		{"image not pulled", pod(waiting("ErrImagePull")), false, `container "c" in pod "new" is waiting to start: image can't be pulled`},
		{"image pull backing off", pod(waiting("ImagePullBackOff")), false, `container "c" in pod "new" is waiting to start: trying and failing to pull image`},
		{"previous", pod(waiting("ContainerCreating")), true, `previous terminated container "c" in pod "new" not found`},
	} {
		if code, got := logsOfC(tc.pod, nil, tc.previous); code != http.StatusBadRequest || got != tc.want {
			t.Errorf("%s: %d %q, want 400 %q", tc.name, code, got, tc.want)
		}
	}
}

// TestLogsOfARemovedContainer: the logs of a container whose status says it ran but which
// the node has removed since (an evicted pod's) are answered as the kubelet's
// GetContainerLogs answers when the runtime no longer knows the ID the status names: 400,
// "unable to retrieve container logs for" that ID.
func TestLogsOfARemovedContainer(t *testing.T) {
	terminated := func(id string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ContainerID: id, ExitCode: 137}
	}
	for _, tc := range []struct {
		name     string
		status   corev1.ContainerStatus
		previous bool
		want     string
	}{
		{"terminated", corev1.ContainerStatus{Name: "c", ContainerID: "containerd://b", State: corev1.ContainerState{Terminated: terminated("containerd://b")}}, false,
			"unable to retrieve container logs for containerd://b"},
		{"running", corev1.ContainerStatus{Name: "c", ContainerID: "containerd://b", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, false,
			"unable to retrieve container logs for containerd://b"},
		{"backing off", corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: terminated("containerd://a")}}, false,
			"unable to retrieve container logs for containerd://a"},
		{"previous", corev1.ContainerStatus{Name: "c", ContainerID: "containerd://b", State: corev1.ContainerState{Terminated: terminated("containerd://b")},
			LastTerminationState: corev1.ContainerState{Terminated: terminated("containerd://a")}}, true,
			"unable to retrieve container logs for containerd://a"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "evicted"},
			Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c"}}},
			Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", ContainerStatuses: []corev1.ContainerStatus{tc.status}}}
		if code, got := logsOfC(pod, nil, tc.previous); code != http.StatusBadRequest || got != tc.want {
			t.Errorf("%s: %d %q, want 400 %q", tc.name, code, got, tc.want)
		}
	}
}

// TestLogsTailParameter: the kubelet still takes the old "tail" query parameter for
// tailLines ("all": no tail), as its getContainerLogs does for backwards compatibility.
func TestLogsTailParameter(t *testing.T) {
	for _, tc := range []struct {
		query map[string][]string
		tail  int64
	}{
		{map[string][]string{"tail": {"2"}}, 2},
		{map[string][]string{"tail": {"all"}}, -1},
		{map[string][]string{"tail": {"all"}, "tailLines": {"3"}}, -1},
		{map[string][]string{"tailLines": {"3"}}, 3},
	} {
		o, err := parseLogOptions(tc.query, time.Now())
		if err != nil || o.read.Tail != tc.tail {
			t.Errorf("%v: tail %d (%v), want %d", tc.query, o.read.Tail, err, tc.tail)
		}
	}
}

// logsOfC is the node API's answer to a request for the logs of container c of pod, on a
// node whose runtime knows the containers known.
func logsOfC(pod *corev1.Pod, known []runtime.Container, previous bool) (int, string) {
	s := New(Config{NodeName: "node-1"}, listOnly{containers: known}, fake.NewClientset(pod), func() error { return nil }, nil, nil)
	r := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/containerLogs/%s/%s/c?previous=%v", pod.Namespace, pod.Name, previous), nil)
	r.SetPathValue("namespace", pod.Namespace)
	r.SetPathValue("pod", pod.Name)
	r.SetPathValue("container", "c")
	w := httptest.NewRecorder()
	s.serveLogs(w, r)
	return w.Code, strings.TrimSpace(w.Body.String())
}
