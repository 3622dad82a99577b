package podsync

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
	"github.com/minik8s/minik8s/pkg/runtime"
)

// postStartTimeout bounds a postStart hook. The kubelet has none and a hung hook holds
// the pod forever; here it fails the hook instead, so the pod can still be deleted.
const postStartTimeout = 2 * time.Minute

// hookOutputMax is how much of a hook's output an event quotes.
const hookOutputMax = 1 << 10

// execIn runs commands in the container with the given status ID (exec probes).
func (s *Syncer) execIn(containerID string) probe.Execer {
	id := runtime.IDFromStatus(containerID)
	return func(ctx context.Context, cmd []string, out io.Writer) (int, error) {
		return s.rt.Exec(ctx, id, runtime.ExecOptions{Cmd: cmd, Stdout: out, Stderr: out})
	}
}

// runHook runs a lifecycle handler for a container: a command in it, an HTTP GET against
// the pod, or a sleep. The error is the message the kubelet puts in its event.
func (s *Syncer) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, containerID string, podIP string, h *corev1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		var out strings.Builder
		code, err := s.rt.Exec(ctx, containerID, runtime.ExecOptions{Cmd: h.Exec.Command, Stdout: &out, Stderr: &out})
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

// runPostStart runs the container's postStart hook, if any; on failure the container is
// killed, as the kubelet does, and its restart policy decides what comes next.
func (s *Syncer) runPostStart(ctx context.Context, st *PodState, pod *corev1.Pod, c *corev1.Container, id string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	hookCtx, cancel := context.WithTimeout(ctx, postStartTimeout)
	defer cancel()
	err := s.runHook(hookCtx, pod, c, id, st.podIP.String(), c.Lifecycle.PostStart)
	if err == nil {
		return nil
	}
	s.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, "FailedPostStartHook", "%s", err.Error())
	kill := s.rt.StopContainer(context.WithoutCancel(ctx), id, gracePeriod(pod))
	if kill != nil {
		return fmt.Errorf("%w; killing the container: %v", err, kill)
	}
	return err
}

// runPreStop runs the container's preStop hook within grace and returns what is left
// of grace for SIGTERM (at least the kubelet's floor of 2 s).
func (s *Syncer) runPreStop(ctx context.Context, pod *corev1.Pod, rc runtime.Container, grace time.Duration) time.Duration {
	c := specOf(pod, rc.Name)
	if c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return grace
	}
	start := s.clock.Now()
	hookCtx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if err := s.runHook(hookCtx, pod, c, rc.ID, pod.Status.PodIP, c.Lifecycle.PreStop); err != nil {
		s.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, "FailedPreStopHook", "%s", err.Error())
	}
	return max(grace-s.clock.Since(start), minGracePeriod)
}

// specOf is the pod's container (init or app) called name.
func specOf(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
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
