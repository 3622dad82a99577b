// Package connect serves the subresources that connect a client to what runs rather than
// to a stored object: pods/{log,exec,attach,portforward} and nodes/ID/proxy through the
// node's API, pods/ID/proxy and services/ID/proxy to the pod or a service endpoint, as
// kube-apiserver's pod, node and service REST (pkg/registry/core/*/rest) and its proxies.
package connect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/minik8s/minik8s/internal/containerwait"
	"github.com/minik8s/minik8s/internal/nodeaddr"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
)

var (
	podsGVR  = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")
)

// connectSubresources are the pod subresources served by the pod's node (pkg/nodeapi), and
// the node API path each goes to.
var connectSubresources = map[string]string{
	"log": "containerLogs", "exec": "exec", "attach": "attach", "portforward": "portForward",
}

// Handler serves the connect subresources; its fields are set before it serves.
type Handler struct {
	// Store is read for a service's EndpointSlices.
	Store store.Interface
	// Objects reads the pods, nodes, services and endpoints connected to, and admits
	// CONNECTs (exec, attach, portforward).
	Objects  *generic.Store
	Registry *registry.Registry
	// NodeTransport carries requests to the nodes' API with miniapi's kubelet-client
	// certificate; nil answers them 503.
	NodeTransport http.RoundTripper
	// NodeAddressTypes are the node address types tried in order to reach a node's API;
	// nil: nodeaddr.DefaultAPITypes.
	NodeAddressTypes []corev1.NodeAddressType
	Log              *slog.Logger
}

// Serve proxies pods/{log,exec,attach,portforward} and nodes/ID/proxy/... to the
// node's API, and pods/ID/proxy/... and services/ID/proxy/... to the pod or a service
// endpoint (connect_proxy.go), as kube-apiserver does; ok is false for any other path.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, ri *request.RequestInfo) bool {
	// Not the deprecated /watch/ and /proxy/ verb paths, which kube-apiserver does not connect either.
	if !ri.IsResourceRequest || ri.APIPrefix != "api" || ri.APIVersion != "v1" || ri.Verb == "watch" || ri.Verb == "proxy" {
		return false
	}
	switch {
	case ri.Resource == "nodes" && ri.Namespace == "" && ri.Subresource == "proxy" && ri.Name != "":
		target, nodeAPI, err := h.nodeProxyLocation(r.Context(), ri.Name)
		if err != nil {
			responsewriters.WriteError(w, err)
			return true
		}
		if nodeAPI {
			h.proxyTo(w, r, target, "/"+strings.Join(ri.Parts[3:], "/"))
		} else {
			proxyToLocation(w, r, target, ri)
		}
		return true
	case ri.Resource == "pods" && ri.Namespace != "" && len(ri.Parts) == 3 && ri.Name != "" && connectSubresources[ri.Subresource] != "":
		h.proxyPodSubresource(w, r, ri.Namespace, ri.Name, ri.Subresource)
		return true
	case (ri.Resource == "pods" || ri.Resource == "services") && ri.Namespace != "" && ri.Subresource == "proxy" && ri.Name != "":
		h.proxyToPodOrService(w, r, ri)
		return true
	}
	return false
}

func (h *Handler) proxyPodSubresource(w http.ResponseWriter, r *http.Request, ns, name, sub string) {
	pods, _ := h.Registry.Lookup(podsGVR)
	if sub == "log" {
		if err := validLogOptions(name, r.URL.Query()); err != nil {
			responsewriters.WriteError(w, err)
			return
		}
	}
	if options := connectOptions(sub, r.URL.Query()); options != nil {
		if err := h.Objects.AdmitConnect(r.Context(), pods, sub, ns, name, options); err != nil {
			responsewriters.WriteError(w, err)
			return
		}
	}
	obj, err := h.Objects.Get(r.Context(), pods, ns, name)
	if err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	pod := obj.(*corev1.Pod)
	path := "/" + connectSubresources[sub] + "/" + ns + "/" + name
	if sub != "portforward" {
		container, err := podContainer(pod, r.URL.Query().Get("container"), sub, r.URL.Query().Get("previous") == "true")
		if err != nil {
			responsewriters.WriteError(w, err)
			return
		}
		path += "/" + container
	}
	switch {
	case pod.Spec.NodeName == "" && sub == "log":
		// kube's LogLocation gives no location, and a null stream is 204 No Content:
		// kubectl logs of a pod not yet scheduled prints nothing and succeeds.
		w.WriteHeader(http.StatusNoContent)
		return
	case pod.Spec.NodeName == "":
		responsewriters.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name)))
		return
	}
	podQuery := r.URL.Query()
	switch sub {
	case "exec", "attach":
		r.URL.RawQuery = streamQuery(podQuery).Encode()
	case "log":
		r.URL.RawQuery = logQuery(podQuery).Encode()
	}
	if h.serveWebSocket(w, r, pod.Spec.NodeName, sub, path, podQuery) {
		return
	}
	h.proxyToNode(w, r, pod.Spec.NodeName, path)
}

// connectOptions are the options of a CONNECT (exec, attach, portforward), read from its
// query as kube-apiserver reads them, for admission; nil for pods/log, which is a GET.
func connectOptions(sub string, q url.Values) runtime.Object {
	flag := func(name string) bool { b, _ := strconv.ParseBool(q.Get(name)); return b }
	meta := func(kind string) metav1.TypeMeta { return metav1.TypeMeta{APIVersion: "v1", Kind: kind} }
	switch sub {
	case "exec":
		return &corev1.PodExecOptions{TypeMeta: meta("PodExecOptions"), Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"),
			TTY: flag("tty"), Container: q.Get("container"), Command: q["command"]}
	case "attach":
		return &corev1.PodAttachOptions{TypeMeta: meta("PodAttachOptions"), Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"),
			TTY: flag("tty"), Container: q.Get("container")}
	case "portforward":
		options := &corev1.PodPortForwardOptions{TypeMeta: meta("PodPortForwardOptions")}
		for _, p := range q["ports"] {
			if port, err := strconv.ParseInt(p, 10, 32); err == nil {
				options.Ports = append(options.Ports, int32(port))
			}
		}
		return options
	}
	return nil
}

// validLogOptions checks a pods/log query as kube-apiserver's LogREST does before it
// reads the pod (ValidatePodLogOptions; the PodLogsQuerySplitStreams feature, alpha in
// v1.36, is off): kubectl checks only some of these itself (`--since=400ms` is sent as
// sinceSeconds=0).
func validLogOptions(name string, q url.Values) error {
	number := func(key string) (*int64, error) {
		v, ok := q[key]
		if !ok || len(v) == 0 {
			return nil, nil
		}
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return &n, nil
	}
	tail, err := number("tailLines")
	if err != nil {
		return err
	}
	limit, err := number("limitBytes")
	if err != nil {
		return err
	}
	since, err := number("sinceSeconds")
	if err != nil {
		return err
	}
	var errs field.ErrorList
	if tail != nil && *tail < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *tail, apimachineryvalidation.IsNegativeErrorMsg))
	}
	if limit != nil && *limit < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *limit, "must be greater than 0"))
	}
	switch {
	case since != nil && len(q["sinceTime"]) > 0:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case since != nil && *since < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *since, "must be greater than 0"))
	}
	if len(q["stream"]) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("stream"), "may not be specified"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	return nil
}

// streamQuery turns PodExecOptions/PodAttachOptions parameters into the node API's
// (input, output, error, tty, command), as kube-apiserver does.
func streamQuery(q url.Values) url.Values {
	out := url.Values{}
	for from, to := range map[string]string{"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"} {
		if v := q.Get(from); v == "true" || v == "1" {
			out.Set(to, "1")
		}
	}
	out["command"] = q["command"]
	return out
}

// logQuery is the query of a log request to the node as kube-apiserver's LogLocation
// writes it: the log options that are set (validLogOptions checked them), not the
// container, which is in the path.
func logQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, flag := range []string{"follow", "previous", "timestamps"} {
		if on, _ := strconv.ParseBool(q.Get(flag)); on {
			out.Set(flag, "true")
		}
	}
	for _, option := range []string{"sinceSeconds", "sinceTime", "tailLines", "limitBytes"} {
		if v := q.Get(option); v != "" {
			out.Set(option, v)
		}
	}
	return out
}

// podContainer is the container a request names, checked as kube-apiserver checks it (one
// of the pod's), and for logs as the kubelet checks its status (validateContainerLogStatus:
// a container that ran has logs, even while it waits to restart). Exec and attach go to
// the node, which answers for a container that does not run, as the kubelet.
func podContainer(pod *corev1.Pod, name, sub string, previous bool) (string, error) {
	if name == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			name = pod.Spec.Containers[0].Name
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		default: // every container named, init and ephemeral ones too, as kube's validateContainer
			var names []string
			for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
				names = append(names, c.Name)
			}
			for _, c := range pod.Spec.EphemeralContainers {
				names = append(names, c.Name)
			}
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
		}
	}
	if !podHasContainer(pod, name) {
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	if sub != "log" || previous {
		return name, nil // the node knows what runs and the runs it kept
	}
	// Without a status yet, the node answers for what it runs.
	if _, waiting := containerwait.Message(pod, name); waiting != "" {
		return "", apierrors.NewBadRequest(waiting)
	}
	return name, nil
}

// podHasContainer tells whether the pod has a container, init container or ephemeral
// container called name: each has logs, and can be attached to or exec'd into.
func podHasContainer(pod *corev1.Pod, name string) bool {
	has := func(c corev1.Container) bool { return c.Name == name }
	return slices.ContainsFunc(pod.Spec.Containers, has) || slices.ContainsFunc(pod.Spec.InitContainers, has) ||
		slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == name })
}

// proxyToNode sends the request to path on the node's API (nodeURL), upgrades (SPDY,
// WebSocket) included.
func (h *Handler) proxyToNode(w http.ResponseWriter, r *http.Request, nodeName, path string) {
	target, err := h.nodeURL(r.Context(), nodeName)
	if err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	h.proxyTo(w, r, target, path)
}

// nodeProxyLocation is where nodes/ID/proxy goes, as kube's node ResourceLocation: ID is
// NAME, NAME:PORT or SCHEME:NAME:PORT; with no port or the node API's own it is the node
// API (nodeAPI: through miniapi's client certificate, whatever scheme ID names), with
// another it is that port and scheme on the node's host.
func (h *Handler) nodeProxyLocation(ctx context.Context, id string) (target *url.URL, nodeAPI bool, err error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", id))
	}
	target, err = h.nodeURL(ctx, name)
	if err != nil {
		return nil, false, err
	}
	if err := proxyableNodeHost(ctx, target.Hostname()); err != nil {
		return nil, false, err
	}
	if port == "" || port == target.Port() {
		return target, true, nil
	}
	if scheme == "" {
		scheme = "http" // as the upgrade-aware proxy reads a location without one
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(target.Hostname(), port)}, false, nil
}

// proxyableNodeHost refuses, as kube-apiserver's nodes/proxy does (isProxyableHostname), a
// node host that is or resolves to an address other than a global unicast one (loopback,
// link-local such as a cloud's metadata server, unspecified, multicast): a node's status
// must not turn the API server into a proxy to its own host. Logs, exec, attach and
// port-forward are not checked, as in kube.
func proxyableNodeHost(ctx context.Context, host string) error {
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if len(addrs) == 0 {
		return apierrors.NewBadRequest("no addresses for hostname")
	}
	for _, a := range addrs {
		if !a.IP.IsGlobalUnicast() {
			return apierrors.NewBadRequest("address not allowed")
		}
	}
	return nil
}

// proxyTo sends the request to path on the node's API at target.
func (h *Handler) proxyTo(w http.ResponseWriter, r *http.Request, target *url.URL, path string) {
	if h.NodeTransport == nil {
		responsewriters.WriteError(w, apierrors.NewServiceUnavailable("miniapi has no client certificate for the node API"))
		return
	}
	target.Path, target.RawQuery = path, r.URL.RawQuery
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Authorization") // the node trusts miniapi's certificate, not the user's token
		},
		Transport:     h.NodeTransport,
		FlushInterval: -1, // follows and streams go through at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var fromNode apierrors.APIStatus
			if !errors.As(err, &fromNode) {
				err = unreachableNode(r, target, err)
			}
			responsewriters.WriteError(w, err)
		},
		ModifyResponse: nodeError,
	}
	proxy.ServeHTTP(w, r)
}

// unreachableNode is kube-apiserver's error for a node it could not reach, in the words of
// the handler that proxies r there: the upgrade-aware proxy's dial for an upgrade (exec,
// attach, port-forward), the HTTP client's for a log, and for nodes/proxy the proxy
// transport's 503.
func unreachableNode(r *http.Request, target *url.URL, err error) error {
	switch {
	case httpstream.IsUpgradeRequest(r):
		return responsewriters.UnknownError(fmt.Errorf("error dialing backend: %w", err))
	case strings.HasPrefix(target.Path, "/containerLogs/"):
		return logReadError(target, err)
	}
	return apierrors.NewServiceUnavailable("error trying to reach service: " + err.Error())
}

// logReadError is a failed GET of a log from the node as kube-apiserver's log streamer
// reports it: the HTTP client's error, `Get "URL": ...`.
func logReadError(target *url.URL, err error) error {
	return responsewriters.UnknownError(&url.Error{Op: "Get", URL: target.String(), Err: err})
}

// nodeError is the node API's plain-text error as a Status error with its text as the
// message, as kube-apiserver's response checker makes of the kubelet's (kubectl then prints
// "previous terminated container ... not found", not "the server rejected our request for
// an unknown reason"); the proxy's ErrorHandler writes it. Upgrades (exec, attach,
// port-forward over SPDY) pass as they are, refused ones too, as kube-apiserver's
// upgrade-aware proxy passes the kubelet's answer: kubectl then prints "unable to upgrade
// connection: container not found ("c")".
func nodeError(resp *http.Response) error {
	if resp.StatusCode < http.StatusBadRequest || resp.StatusCode == http.StatusSwitchingProtocols ||
		(resp.Request != nil && httpstream.IsUpgradeRequest(resp.Request)) ||
		strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	text := strings.TrimSpace(string(body))
	switch resp.StatusCode {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(errors.New(text))
	}
	// The reason the code implies, and the node's words rather than a generic text.
	status := apierrors.NewGenericServerResponse(resp.StatusCode, "", schema.GroupResource{Resource: "pods"}, "", text, 0, false)
	if text != "" {
		status.ErrStatus.Message, status.ErrStatus.Details = text, nil
	}
	return status
}

// nodeURL is where the node's API answers, as kube's NodeConnectionInfoGetter finds it: at
// its address of the first preferred type it has and its daemonEndpoints port.
func (h *Handler) nodeURL(ctx context.Context, nodeName string) (*url.URL, error) {
	nodes, _ := h.Registry.Lookup(nodesGVR)
	obj, err := h.Objects.Get(ctx, nodes, "", nodeName)
	if err != nil {
		return nil, err
	}
	node := obj.(*corev1.Node)
	host, err := nodeaddr.APIHostPort(node, h.NodeAddressTypes)
	if err != nil {
		return nil, responsewriters.UnknownError(err)
	}
	return &url.URL{Scheme: "https", Host: host}, nil
}
