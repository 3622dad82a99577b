// Package probe runs a container probe's handler as the kubelet's prober does: httpGet
// (success for 200-399, redirects to the same host followed, no TLS verification,
// keep-alives off, the kubelet's User-Agent), tcpSocket (a connection opens) and grpc
// (grpc.health.v1 Health/Check) and exec (a command in the container, through the
// runtime the caller hands in: success for exit code 0).
package probe

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Result of one probe.
type Result int

const (
	Unknown Result = iota
	Success
	Failure
	// Warning is a success with something to say: an HTTP probe that ended on a redirect
	// it did not follow (the kubelet's probe.Warning).
	Warning
)

func (r Result) String() string {
	return [...]string{"unknown", "success", "failure", "warning"}[r]
}

// userAgent is what the kubelet sends, so probed servers cannot tell the difference.
const userAgent = "kube-probe/1.32"

// maxBody is how much of a response (or command output) the kubelet reads and reports.
const maxBody = 10 << 10

// Execer runs cmd in the probed container and returns its exit code and output; an
// error means the command could not be run at all.
type Execer func(ctx context.Context, cmd []string, output io.Writer) (exitCode int, err error)

// Run runs the probe's handler against the container (its pod at podIP; exec probes
// through exec) and returns the result with the output Kubernetes reports on failure.
func Run(ctx context.Context, p *corev1.Probe, c *corev1.Container, podIP string, exec Execer) (Result, string) {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch h := p.ProbeHandler; {
	case h.HTTPGet != nil:
		port, err := ResolveContainerPort(h.HTTPGet.Port, c)
		if err != nil {
			return Unknown, err.Error()
		}
		host := h.HTTPGet.Host
		if host == "" {
			host = podIP
		}
		scheme := strings.ToLower(string(h.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		path := h.HTTPGet.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := url.Parse(scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path)
		if err != nil {
			return Failure, err.Error()
		}
		return HTTP(ctx, u, h.HTTPGet.HTTPHeaders)
	case h.TCPSocket != nil:
		port, err := ResolveContainerPort(h.TCPSocket.Port, c)
		if err != nil {
			return Unknown, err.Error()
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		return TCP(ctx, net.JoinHostPort(host, strconv.Itoa(port)))
	case h.GRPC != nil:
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		return GRPC(ctx, net.JoinHostPort(podIP, strconv.Itoa(int(h.GRPC.Port))), service)
	case h.Exec != nil:
		return Exec(ctx, h.Exec.Command, exec)
	}
	return Unknown, "the probe has no handler"
}

// ResolveContainerPort is the kubelet's (pkg/probe): a port number, or the number of the
// container port with that name, or a name that is a number; it must be 1-65535.
func ResolveContainerPort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	port := p.IntValue()
	if p.Type == intstr.String {
		i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.StrVal })
		if i >= 0 {
			port = int(c.Ports[i].ContainerPort)
		} else if n, err := strconv.Atoi(p.StrVal); err != nil {
			return -1, err
		} else {
			port = n
		}
	}
	if port < 1 || port > 65535 {
		return port, fmt.Errorf("invalid port number: %v", port)
	}
	return port, nil
}

// probeDialer opens every probe's connection. Unlike the kubelet's it sets no SO_LINGER of
// one second (kubernetes/kubernetes#89898): on Linux that leaves TIME_WAIT as it is and
// makes each close wait for the peer's FIN, +22 µs of CPU per tcpSocket probe
// (docs/performance.md, "minilet: probing").
var probeDialer = &net.Dialer{}

// Exec is the exec handler: the command must exit 0 before ctx's deadline. Its output
// (the first maxBody bytes) is what a failure reports, as the kubelet does.
func Exec(ctx context.Context, cmd []string, exec Execer) (Result, string) {
	if exec == nil {
		return Unknown, "exec probes need a container runtime"
	}
	out := &limitedBuffer{max: maxBody}
	code, err := exec(ctx, cmd, out)
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " "))
	case err != nil:
		return Unknown, err.Error()
	case code != 0:
		return Failure, out.String()
	}
	return Success, out.String()
}

// limitedBuffer keeps the first max bytes written to it and drops the rest, so a
// chatty probe command cannot grow minilet's memory.
type limitedBuffer struct {
	buf strings.Builder
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string { return b.buf.String() }

// TCP is the tcpSocket handler: success when a connection opens.
func TCP(ctx context.Context, addr string) (Result, string) {
	conn, err := probeDialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Failure, err.Error()
	}
	conn.Close()
	return Success, ""
}

func deadlineOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d).Round(time.Second)
	}
	return 0
}
