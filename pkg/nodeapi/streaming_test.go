package nodeapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/minik8s/minik8s/internal/syncbuf"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// clientStream is the port-forward data stream as the node sees it: what the client sent,
// then the client's half-close (EOF); what the node writes back is kept.
type clientStream struct {
	in io.Reader
	syncbuf.Buffer
}

func (s *clientStream) Read(p []byte) (int, error) { return s.in.Read(p) }
func (s *clientStream) Close() error               { return nil }

// A port nothing listens on is refused in containerd's words (sandbox_portforward_linux.go:
// IPv4 first, then IPv6), which the streaming library prefixes with "error forwarding port
// 81 to pod <sandbox ID>, uid :" for kubectl.
func TestPortForwardToAClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// A hostNetwork pod's namespace is "host" in the error, as containerd names it.
	err = podDialer{hostNetwork: true}.PortForward(context.Background(), "sb1", "", int32(port), &clientStream{in: strings.NewReader("")})
	want := fmt.Sprintf(`failed to execute portforward in network namespace "host": `+
		`failed to connect to localhost:%d inside namespace "sb1", `+
		`IPv4: dial tcp4 127.0.0.1:%[1]d: connect: connection refused IPv6 dial tcp6 [::1]:%[1]d: connect: connection refused `, port)
	if err == nil || err.Error() != want {
		t.Errorf("port-forward to a closed port: %v\nwant %s", err, want)
	}
}

// podPort listens on a loopback port as a pod's server would, serves its first connection
// with serve and returns the port.
func podPort(t *testing.T, serve func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		serve(conn)
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// A client that sends its request and half-closes still gets the answer that follows, as
// through containerd, which waits for the other direction after one ends.
func TestPortForwardAnswerAfterTheClientHalfCloses(t *testing.T) {
	port := podPort(t, func(conn net.Conn) {
		line := make([]byte, len("ping\n"))
		if _, err := io.ReadFull(conn, line); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the answer comes after the client's EOF
		_, _ = conn.Write([]byte("pong\n"))
	})
	stream := &clientStream{in: strings.NewReader("ping\n")}
	if err := (podDialer{}).PortForward(context.Background(), "sb1", "", int32(port), stream); err != nil {
		t.Fatal(err)
	}
	if got := stream.String(); got != "pong\n" {
		t.Errorf("the pod's answer after the client's half-close: got %q, want %q", got, "pong\n")
	}
}

// A forward lives as long as both sides keep it open: an answer slower than the second the
// closing of one direction gets still arrives.
func TestPortForwardOutlivesASlowAnswer(t *testing.T) {
	port := podPort(t, func(conn net.Conn) {
		time.Sleep(1500 * time.Millisecond)
		_, _ = conn.Write([]byte("late\n"))
	})
	in, client := io.Pipe()
	stream := &clientStream{in: in}
	done := make(chan error, 1)
	go func() {
		done <- podDialer{}.PortForward(context.Background(), "sb1", "", int32(port), stream)
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	client.Close()
	if got := stream.String(); got != "late\n" {
		t.Errorf("an answer after 1.5s on an open forward: got %q, want %q", got, "late\n")
	}
}

// resizeRuntime runs one container, default/a's c; exec and attach print the first two
// terminal sizes they are given.
type resizeRuntime struct{}

func (resizeRuntime) ListContainers(context.Context, string) ([]runtime.Container, error) {
	base := runtime.Container{PodNamespace: "default", PodName: "a", State: runtime.StateRunning, StartedAt: time.Now()}
	sandbox, c := base, base
	sandbox.ID, sandbox.Sandbox = "sb", true
	c.ID, c.Name = "cid", "c"
	return []runtime.Container{sandbox, c}, nil
}

func printSizes(tty bool, sizes <-chan runtime.TerminalSize, out io.Writer) error {
	if !tty || sizes == nil {
		return fmt.Errorf("tty %v, resize channel %v", tty, sizes)
	}
	for range 2 {
		select {
		case s := <-sizes:
			fmt.Fprintf(out, "%dx%d ", s.Width, s.Height)
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no terminal size within 10s")
		}
	}
	return nil
}

func (resizeRuntime) Exec(_ context.Context, _ string, o runtime.ExecOptions) (int, error) {
	return 0, printSizes(o.TTY, o.Resize, o.Stdout)
}

func (resizeRuntime) Attach(_ context.Context, _ string, o runtime.AttachOptions) error {
	return printSizes(o.TTY, o.Resize, o.Stdout)
}

// sizeQueue is a terminal resized twice, as kubectl's TerminalSizeQueue reports it.
type sizeQueue struct {
	sizes chan remotecommand.TerminalSize
}

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	if s, ok := <-q.sizes; ok {
		return &s
	}
	return nil
}

// `kubectl exec -it` and `attach -it` pass each resize of the client's terminal on to the
// process's terminal, as the kubelet does (remotecommand's resize stream).
func TestTerminalResizesReachTheProcess(t *testing.T) {
	srv := httptest.NewServer(New(Config{NodeName: "node-1"}, resizeRuntime{}, nil, func() error { return nil }, nil, nil))
	defer srv.Close()
	for _, path := range []string{"/exec/default/a/c?command=sh&output=1&tty=1", "/attach/default/a/c?output=1&tty=1"} {
		u, _ := url.Parse(srv.URL + path)
		ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: srv.URL}, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		q := sizeQueue{make(chan remotecommand.TerminalSize, 2)}
		q.sizes <- remotecommand.TerminalSize{Width: 80, Height: 24}
		q.sizes <- remotecommand.TerminalSize{Width: 132, Height: 43}
		var out bytes.Buffer
		err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: q})
		close(q.sizes)
		if err != nil || out.String() != "80x24 132x43 " {
			t.Errorf("%s: %v, the process saw %q; want 80x24 132x43", path, err, out.String())
		}
	}
}

// Port-forward to a pod with no running sandbox here answers as the kubelet's
// GetPortForward, which looks among running pods: 500 `pod not found ("a_default")`.
func TestPortForwardNeedsARunningSandbox(t *testing.T) {
	exited := runtime.Container{ID: "sb", PodNamespace: "default", PodName: "a", Sandbox: true, State: runtime.StateExited}
	for name, known := range map[string][]runtime.Container{"no sandbox": nil, "an exited sandbox": {exited}} {
		s := New(Config{NodeName: "node-1"}, listOnly{containers: known}, nil, func() error { return nil }, nil, nil)
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/portForward/default/a?port=80", nil)
		s.ServeHTTP(w, r)
		if body := strings.TrimSpace(w.Body.String()); w.Code != http.StatusInternalServerError || body != `pod not found ("a_default")` {
			t.Errorf("%s: %d %q; want 500 pod not found (\"a_default\")", name, w.Code, body)
		}
	}
}

// A pod this node does not run (bound to another node, or gone) is answered as the
// kubelet's server answers a pod its pod manager does not have: 404 `pod does not exist`
// (logs: `pod "NAME" does not exist`), before its containers are looked for; a log of a
// container the pod does not declare is 404 `container "x" not found in pod "NAME"`.
func TestStreamsToAPodNotOnThisNode(t *testing.T) {
	here := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c"}}}}
	there := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "elsewhere"}, Spec: corev1.PodSpec{NodeName: "node-2"}}
	running := []runtime.Container{
		{ID: "sb", PodNamespace: "default", PodName: "a", Sandbox: true, State: runtime.StateRunning},
		{ID: "c1", PodNamespace: "default", PodName: "a", Name: "c", State: runtime.StateRunning, LogPath: "/nonexistent"},
	}
	s := New(Config{NodeName: "node-1"}, listOnly{containers: running}, fake.NewClientset(here, there), func() error { return nil }, nil, nil)
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/exec/default/elsewhere/c?command=true&output=1", "pod does not exist"},
		{"POST", "/attach/default/gone/c?output=1", "pod does not exist"},
		{"POST", "/portForward/default/elsewhere?port=80", "pod does not exist"},
		{"POST", "/run/default/gone/c?cmd=true", "pod does not exist"},
		{"GET", "/containerLogs/default/elsewhere/c", `pod "elsewhere" does not exist`},
		{"GET", "/containerLogs/default/a/x", `container "x" not found in pod "a"`},
	} {
		w := httptest.NewRecorder()
		s.mux.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil)) // behind the access review
		if body := strings.TrimSpace(w.Body.String()); w.Code != http.StatusNotFound || body != tc.want {
			t.Errorf("%s %s: %d %q; want 404 %q", tc.method, tc.path, w.Code, body, tc.want)
		}
	}
}
