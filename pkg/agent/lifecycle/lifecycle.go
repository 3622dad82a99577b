// Package lifecycle runs containers' lifecycle hooks (postStart, preStop) as the kubelet's
// handler runner (pkg/kubelet/lifecycle) does: a command in the container, an HTTP GET
// against the pod, or a sleep, a failure worded as the kubelet's event.
package lifecycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/probe"
)

// hookOutputMax is how much of a hook's output an event quotes.
const hookOutputMax = 1 << 10

// Eventf records an event about the pod (the kubelet's LifecycleHTTPFallback warning).
type Eventf func(eventType, reason, format string, args ...any)

// Run runs handler h of container c, as the kubelet's handlerRunner.Run: a command in it
// through exec, an HTTP GET against the pod at podIP, or a sleep. The error is the
// kubelet's message for the failure (a failed postStart's waiting message).
func Run(ctx context.Context, exec probe.Execer, pod *corev1.Pod, c *corev1.Container, podIP string, h *corev1.LifecycleHandler, event Eventf) error {
	switch {
	case h.Exec != nil:
		var out strings.Builder
		code, err := exec(ctx, h.Exec.Command, &out)
		if err == nil && code != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), code, cut(out.String(), hookOutputMax))
		}
		if err != nil {
			return fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podDesc(pod), err, cut(out.String(), hookOutputMax))
		}
		return nil
	case h.HTTPGet != nil:
		if err := hookHTTPGet(ctx, h.HTTPGet, c, podIP, event); err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podDesc(pod), err)
		}
		return nil
	case h.Sleep != nil:
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		case <-ctx.Done():
		}
		return nil
	}
	return fmt.Errorf("lifecycle hook for Container %q in Pod %q has no handler", c.Name, podDesc(pod))
}

// userAgent is what the kubelet's hook requests send unless the hook sets its own:
// "kube-lifecycle/" and the kubelet's major.minor version (the probes' is kube-probe/).
const userAgent = "kube-lifecycle/1.32"

// hookClient is the kubelet's insecureContainerLifecycleHTTPClient: no proxy, no TLS
// verification (a pod's certificate is rarely one the node trusts), redirects followed
// only within the same host. It carries no credentials.
var hookClient = &http.Client{
	Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives: true,
	},
	CheckRedirect: sameHostRedirects,
}

// sameHostRedirects is the kubelet's httpprobe.RedirectChecker(false): a redirect to
// another host is not followed (its response is the answer), at most 10 are.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// hookHTTPGet sends the hook's GET, as the kubelet's runHTTPHandler; as there, only a
// failed request fails the hook, whatever the status code. An HTTPS hook answered in
// plain HTTP is sent again over HTTP, and event reports it when that succeeds.
func hookHTTPGet(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP string, event Eventf) error {
	req, err := hookRequest(ctx, g, c, podIP)
	if err != nil {
		return err
	}
	resp, err := hookClient.Do(req)
	discard(resp)
	if err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization") // not sent in clear text
		resp, retryErr := hookClient.Do(retry)
		discard(resp)
		if retryErr == nil {
			err = nil
			if event != nil {
				event(corev1.EventTypeWarning, "LifecycleHTTPFallback", "request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", retry.URL.Host)
			}
		}
	}
	return err
}

// hookRequest builds the hook's request as the kubelet's NewRequestForHTTPGetAction:
// scheme http and the pod IP unless set, the port by number or container port name,
// the hook's headers with a Host header as the request's host, and the kubelet's
// User-Agent and Accept */* unless the hook sets them (an empty Accept sends none).
func hookRequest(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	port, err := probe.ResolveContainerPort(g.Port, c)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(g.Path)
	if err != nil { // passed along as it is, as the kubelet does
		u = &url.URL{Path: g.Path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	header := probe.RequestHeader(g.HTTPHeaders, userAgent)
	req.Header = header
	req.Host = header.Get("Host") // net/http sends req.Host, never a Host header
	return req, nil
}

// discard reads what is left of a small response body and closes it.
func discard(resp *http.Response) {
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength <= maxBody {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	}
}

// maxBody is how much of a hook's response the kubelet reads before closing it.
const maxBody = 10 << 10

// podDesc names a pod as the kubelet's messages do: name_namespace(uid).
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
