// Package lifecycle runs containers' lifecycle hooks (postStart, preStop) as the kubelet's
// handler runner (pkg/kubelet/lifecycle) does: a command in the container, an HTTP GET
// against the pod, or a sleep, a failure worded as the kubelet's event.
package lifecycle

import (
	"context"
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

// Run runs handler h of container c: a command in it through exec, an HTTP GET against
// the pod at podIP, or a sleep. The error is the message the kubelet puts in its event.
func Run(ctx context.Context, exec probe.Execer, pod *corev1.Pod, c *corev1.Container, podIP string, h *corev1.LifecycleHandler) error {
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
		if err := hookHTTPGet(ctx, h.HTTPGet, c, podIP); err != nil {
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

// hookHTTPGet sends the hook's GET; as in the kubelet, only a failed request fails the
// hook, whatever the status code.
func hookHTTPGet(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP string) error {
	port := g.Port.IntValue()
	if port == 0 {
		for _, p := range c.Ports {
			if p.Name == g.Port.StrVal {
				port = int(p.ContainerPort)
			}
		}
	}
	if port <= 0 || port > 65535 {
		return fmt.Errorf("invalid port %q", g.Port.String())
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.Body.Close()
}

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
