package nodeapi

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// httpError is an error with the HTTP status it answers with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{code: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

// writeError answers with err's status (500 for plain errors) and message.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if he, ok := err.(*httpError); ok {
		code = he.code
	}
	http.Error(w, err.Error(), code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// errNoSuchPod is the kubelet's answer to exec, attach, run and port-forward for a pod it
// does not run.
var errNoSuchPod = notFound("pod does not exist")

// nodePod is the pod namespace/name and whether this node runs it (it is bound here), as
// the kubelet's GetPodByName finds it among its pods. pod is nil when that is not known (no
// API client in unit tests, the API not answering): the runtime then decides.
func (s *Server) nodePod(ctx context.Context, namespace, name string) (pod *corev1.Pod, here bool) {
	if s.client == nil {
		return nil, true
	}
	pod, err := s.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err): // a node may read only its own pods
		return nil, false
	case err != nil:
		return nil, true
	}
	return pod, pod.Spec.NodeName == s.cfg.NodeName
}

// declares tells whether the pod has a container, init container or ephemeral container
// called name (the kubelet's GetContainerSpec).
func declares(pod *corev1.Pod, name string) bool {
	named := func(c corev1.Container) bool { return c.Name == name }
	return slices.ContainsFunc(pod.Spec.Containers, named) || slices.ContainsFunc(pod.Spec.InitContainers, named) ||
		slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == name })
}

// podContainers are the containerd containers of the pod namespace/name on this node,
// newest first; the pod's sandbox among them.
func (s *Server) podContainers(r *http.Request, namespace, pod string) ([]runtime.Container, error) {
	all, err := s.rt.ListContainers(r.Context(), "")
	if err != nil {
		return nil, err
	}
	var out []runtime.Container
	for _, c := range all {
		if c.PodNamespace == namespace && c.PodName == pod {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, notFound("pod %s/%s has no containers on node %s", namespace, pod, s.cfg.NodeName)
	}
	// A pod deleted and created again under the same name: only the newest sandbox's
	// containers are the pod's.
	slices.SortFunc(out, newestFirst)
	return out, nil
}

// runningContainer finds the running container name of pod namespace/name, for exec and
// attach.
func (s *Server) runningContainer(r *http.Request, namespace, pod, name string) (runtime.Container, error) {
	c, found, err := s.findRunning(r, namespace, pod, func(c runtime.Container) bool { return !c.Sandbox && c.Name == name })
	if err != nil || found {
		return c, err
	}
	// The kubelet's GetExec/GetAttach/RunInContainer: it looks among running containers
	// only, and answers this as an internal error (cri-streaming's WriteError).
	return runtime.Container{}, fmt.Errorf("container not found (%q)", name)
}

// sandbox is the running pause container of the pod namespace/name, for port-forward.
func (s *Server) sandbox(r *http.Request, namespace, pod string) (runtime.Container, error) {
	c, found, err := s.findRunning(r, namespace, pod, func(c runtime.Container) bool { return c.Sandbox })
	if err != nil || found {
		return c, err
	}
	// The kubelet's GetPortForward: it looks among running pods only, by their full name,
	// and answers this as an internal error (cri-streaming's WriteError).
	return runtime.Container{}, fmt.Errorf("pod not found (%q)", pod+"_"+namespace)
}

// findRunning is the newest running container of pod namespace/name that match accepts;
// errNoSuchPod when the pod is not this node's. A pod without containers is not an error
// here: the callers answer "not found" in the kubelet's words.
func (s *Server) findRunning(r *http.Request, namespace, pod string, match func(runtime.Container) bool) (runtime.Container, bool, error) {
	if _, here := s.nodePod(r.Context(), namespace, pod); !here {
		return runtime.Container{}, false, errNoSuchPod
	}
	list, err := s.podContainers(r, namespace, pod)
	if he, ok := err.(*httpError); err != nil && !(ok && he.code == http.StatusNotFound) {
		return runtime.Container{}, false, err
	}
	for _, c := range list {
		if c.State == runtime.StateRunning && match(c) {
			return c, true, nil
		}
	}
	return runtime.Container{}, false, nil
}

// newestFirst orders containers of one name by start, newest first; never-started ones last.
func newestFirst(a, b runtime.Container) int {
	return cmp.Or(b.StartedAt.Compare(a.StartedAt), strings.Compare(b.ID, a.ID))
}
