package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var nodesResource = corev1.SchemeGroupVersion.WithResource("nodes")

// logParams are the pods/log query parameters passed on to the node, as kube-apiserver
// passes PodLogOptions to the kubelet's /containerLogs.
var logParams = []string{"follow", "previous", "timestamps", "sinceSeconds", "sinceTime", "tailLines", "limitBytes"}

// servePodLog answers `kubectl logs`: it checks the container as kube-apiserver does, then
// streams the node's /containerLogs through (following as long as the node sends).
func (s *Server) servePodLog(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	ctx := r.Context()
	obj, _, err := s.current(ctx, res, info.Name, objectKey(res, info.Namespace, info.Name))
	if err != nil {
		writeError(w, err)
		return
	}
	pod := obj.(*corev1.Pod)
	q := r.URL.Query()
	container, err := logContainer(pod, q.Get("container"), q.Get("previous") == "true")
	if err != nil {
		writeError(w, err)
		return
	}
	target, err := s.nodeURL(ctx, pod)
	if err != nil {
		writeError(w, err)
		return
	}
	target.Path = fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container)
	params := url.Values{}
	for _, p := range logParams {
		if v := q.Get(p); v != "" {
			params.Set(p, v)
		}
	}
	target.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	resp, err := s.kubelet.Do(req)
	if err != nil {
		writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s is unreachable: %v", pod.Spec.NodeName, err)))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		msg := strings.TrimSpace(string(body))
		if resp.StatusCode == http.StatusNotFound {
			writeError(w, apierrors.NewNotFound(schema.GroupResource{Resource: "pods/log"}, msg))
			return
		}
		writeError(w, apierrors.NewBadRequest(msg))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// logContainer picks and checks the container whose log is asked for, with
// kube-apiserver's messages: the only container by default, a valid name, and one that
// has started (or, for --previous, has a terminated instance).
func logContainer(pod *corev1.Pod, name string, previous bool) (string, error) {
	var names, initNames []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		initNames = append(initNames, c.Name)
	}
	if name == "" {
		if def := pod.Annotations["kubectl.kubernetes.io/default-container"]; def != "" {
			name = def
		} else if len(names) == 1 {
			name = names[0]
		} else {
			msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names)
			if len(initNames) > 0 {
				msg += fmt.Sprintf(" or one of the init containers: %v", initNames)
			}
			return "", apierrors.NewBadRequest(msg)
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	known := false
	for _, n := range append(append([]string{}, names...), initNames...) {
		known = known || n == name
	}
	if !known {
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	if pod.Spec.NodeName == "" {
		return "", apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	for _, cs := range statuses {
		if cs.Name != name {
			continue
		}
		if previous {
			if cs.LastTerminationState.Terminated == nil {
				return "", apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", name, pod.Name))
			}
			return name, nil
		}
		if cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil {
			return "", apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %s", name, pod.Name, cs.State.Waiting.Reason))
		}
		return name, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", name, pod.Name))
}

// nodeURL is the node API of the pod's node: its InternalIP and the port it reports.
func (s *Server) nodeURL(ctx context.Context, pod *corev1.Pod) (*url.URL, error) {
	if s.kubelet == nil {
		return nil, apierrors.NewServiceUnavailable("miniapi has no client for node APIs")
	}
	res, ok := s.reg.Lookup(nodesResource)
	if !ok {
		return nil, apierrors.NewInternalError(errors.New("nodes are not served"))
	}
	obj, _, err := s.current(ctx, res, pod.Spec.NodeName, objectKey(res, "", pod.Spec.NodeName))
	if err != nil {
		return nil, err
	}
	node := obj.(*corev1.Node)
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s serves no node API (its minilet has no --tls-cert-file)", node.Name))
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return &url.URL{Scheme: "https", Host: net.JoinHostPort(a.Address, strconv.Itoa(int(port)))}, nil
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s has no InternalIP", node.Name))
}
