package nodeapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

const (
	// streamIdleTimeout ends a stream connection nothing went through for this long (the
	// kubelet's --streaming-connection-idle-timeout default).
	streamIdleTimeout = 4 * time.Hour
	// dialTimeout bounds a port-forward's connection to the pod.
	dialTimeout = 10 * time.Second
)

// The SPDY protocols the kubelet serves; WebSocket clients (kubectl 1.30+) reach it through
// miniapi, which translates them to SPDY as kube-apiserver does.
var (
	execProtocols        = remotecommand.SupportedStreamingProtocols
	portForwardProtocols = portforward.SupportedProtocols
)

// serveExec answers /exec/{namespace}/{pod}/{container}?command=...&input=1&output=1&tty=1.
func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	namespace, pod, name := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		writeError(w, badRequest("exec needs a command (query parameter command)"))
		return
	}
	c, opts, err := s.streamTarget(r, namespace, pod, name)
	if err != nil {
		writeError(w, err)
		return
	}
	remotecommand.ServeExec(w, r, executor{s.rt}, namespace+"/"+pod, c.PodUID, c.ID, cmd, opts,
		streamIdleTimeout, remotecommand.DefaultStreamCreationTimeout, execProtocols)
}

// serveAttach answers /attach/{namespace}/{pod}/{container}?input=1&output=1&tty=1: the
// client joins the running container's streams (runtime.Attach).
func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	namespace, pod, name := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	c, opts, err := s.streamTarget(r, namespace, pod, name)
	if err != nil {
		writeError(w, err)
		return
	}
	remotecommand.ServeAttach(w, r, attacher{s.rt}, namespace+"/"+pod, c.PodUID, c.ID, opts,
		streamIdleTimeout, remotecommand.DefaultStreamCreationTimeout, execProtocols)
}

// streamTarget is what exec and attach start from: the stream options the request asks
// for and the running container it names.
func (s *Server) streamTarget(r *http.Request, namespace, pod, name string) (runtime.Container, *remotecommand.Options, error) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		return runtime.Container{}, nil, badRequest("%v", err)
	}
	c, err := s.runningContainer(r, namespace, pod, name)
	return c, opts, err
}

// servePortForward answers /portForward/{namespace}/{pod}: each stream is a connection to a
// port on the pod's loopback, inside its network namespace.
func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	namespace, pod := r.PathValue("namespace"), r.PathValue("pod")
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeError(w, badRequest("%v", err))
		return
	}
	sb, err := s.sandbox(r, namespace, pod)
	if err != nil {
		writeError(w, err)
		return
	}
	// The sandbox's ID and no UID name the pod in errors, as through containerd.
	portforward.ServePortForward(w, r, podDialer{netns: sb.NetNSPath, hostNetwork: sb.HostNetwork}, sb.ID, "", opts,
		streamIdleTimeout, remotecommand.DefaultStreamCreationTimeout, portForwardProtocols)
}

// serveRun answers POST /run/{namespace}/{pod}/{container}?cmd=...: the command's combined
// output, as the kubelet's /run does.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	namespace, pod, name := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	cmd := r.URL.Query()["cmd"]
	if len(cmd) == 0 {
		writeError(w, badRequest("run needs a command (query parameter cmd)"))
		return
	}
	c, err := s.runningContainer(r, namespace, pod, name)
	if err != nil {
		writeError(w, err)
		return
	}
	var out bytes.Buffer
	code, err := s.rt.Exec(r.Context(), c.ID, runtime.ExecOptions{Cmd: cmd, Stdout: &out, Stderr: &out})
	if err != nil {
		writeError(w, err)
		return
	}
	if code != 0 {
		writeError(w, fmt.Errorf("command terminated with exit code %d: %s", code, out.Bytes()))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(out.Bytes())
}

// executor runs the streaming library's exec requests on the runtime. The container
// argument is the containerd ID serveExec resolved.
type executor struct{ rt Runtime }

func (e executor) ExecInContainer(ctx context.Context, _, _, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	opts := runtime.ExecOptions{Cmd: cmd, TTY: tty}
	// Typed nils would look like streams to the runtime.
	if in != nil {
		opts.Stdin = in
	}
	if out != nil {
		opts.Stdout = out
	}
	if errw != nil && !tty {
		opts.Stderr = errw
	}
	if resize != nil {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		opts.Resize = terminalSizes(ctx, resize)
	}
	code, err := e.rt.Exec(ctx, id, opts)
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// attacher attaches the streaming library's clients to containers; the container
// argument is the containerd ID serveAttach resolved.
type attacher struct{ rt Runtime }

func (a attacher) AttachContainer(ctx context.Context, _, _, id string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	opts := runtime.AttachOptions{TTY: tty}
	if in != nil { // typed nils would look like streams to the runtime
		opts.Stdin = in
	}
	if out != nil {
		opts.Stdout = out
	}
	if errw != nil {
		opts.Stderr = errw
	}
	if resize != nil {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		opts.Resize = terminalSizes(ctx, resize)
	}
	return a.rt.Attach(ctx, id, opts)
}

// terminalSizes passes the streaming library's resizes on in the runtime's type until ctx
// ends.
func terminalSizes(ctx context.Context, resize <-chan remotecommand.TerminalSize) <-chan runtime.TerminalSize {
	sizes := make(chan runtime.TerminalSize)
	go func() {
		defer close(sizes)
		for {
			select {
			case <-ctx.Done():
				return
			case size, ok := <-resize:
				if !ok {
					return
				}
				select {
				case sizes <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return sizes
}

// podDialer connects port-forward streams to the pod's loopback.
type podDialer struct {
	netns       string // "": the namespace minilet runs in
	hostNetwork bool   // the node's namespace: "host" in errors, as containerd names it
}

// PortForward is containerd's (sandbox_portforward_linux.go), in its words: IPv4 first,
// then IPv6; once one direction ends, the other gets a second to finish. pod is the
// sandbox's ID, as containerd's streaming server passes it.
func (d podDialer) PortForward(ctx context.Context, pod, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	var conn net.Conn
	dial := func() error {
		var err4, err6 error
		dialer := net.Dialer{Timeout: dialTimeout}
		if conn, err4 = dialer.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))); err4 == nil {
			return nil
		}
		if conn, err6 = dialer.DialContext(ctx, "tcp6", net.JoinHostPort("::1", strconv.Itoa(int(port)))); err6 == nil {
			return nil
		}
		return fmt.Errorf("failed to connect to localhost:%d inside namespace %q, IPv4: %v IPv6 %v ", port, pod, err4, err6)
	}
	var err error
	if d.netns == "" {
		err = dial()
	} else {
		err = network.InNetNS(d.netns, dial) // the socket stays in the pod's namespace
	}
	if err != nil {
		netns := d.netns
		if d.hostNetwork {
			netns = "host"
		}
		return fmt.Errorf("failed to execute portforward in network namespace %q: %w", netns, err)
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); closeWrite(conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
		return nil
	}
	select {
	case <-done:
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
	return nil
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
