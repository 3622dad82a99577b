package apiserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	"github.com/minik8s/minik8s/pkg/crilog"
	"github.com/minik8s/minik8s/pkg/nodeapi"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// fakeNodeRuntime is the node API's runtime for one running pod default/a (container c,
// host network, its log at logPath): exec echoes its input after its command and exits 3.
type fakeNodeRuntime struct{ logPath string }

func (f fakeNodeRuntime) ListContainers(context.Context, string) ([]runtime.Container, error) {
	base := runtime.Container{PodUID: "uid-a", PodNamespace: "default", PodName: "a", State: runtime.StateRunning, StartedAt: time.Now()}
	sandbox, app := base, base
	sandbox.ID, sandbox.Name, sandbox.Sandbox = "sb", "sandbox", true
	app.ID, app.Name, app.LogPath = "cid", "c", f.logPath
	return []runtime.Container{sandbox, app}, nil
}

func (fakeNodeRuntime) Exec(_ context.Context, id string, o runtime.ExecOptions) (int, error) {
	_, _ = io.WriteString(o.Stdout, id+":"+strings.Join(o.Cmd, " ")+":")
	if o.Stdin != nil {
		_, _ = io.Copy(o.Stdout, o.Stdin)
	}
	return 3, nil
}

func (fakeNodeRuntime) Attach(context.Context, string, runtime.AttachOptions) error {
	return errors.New("not used")
}

// serverWithNode is a miniapi whose node-1 is the node API over rt, and pod default/a
// running on it; seen is called with each request reaching the node.
func serverWithNode(t *testing.T, rt nodeapi.Runtime, seen func(*http.Request)) *httptest.Server {
	t.Helper()
	api := nodeapi.New(nodeapi.Config{NodeName: "node-1"}, rt, nil, func() error { return nil }, nil, nil)
	node := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen(r)
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(node.Close)
	_, port, _ := net.SplitHostPort(node.Listener.Addr().String())
	nodePort, _ := strconv.Atoi(port)

	s, _ := newCachedServer(t)
	s.connect.NodeTransport = node.Client().Transport
	h := s.Handler()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if w := do(t, h, "POST", "/api/v1/nodes", n); w.Code != http.StatusCreated {
		t.Fatalf("create node: %d %s", w.Code, w.Body)
	}
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/nodes/node-1", nil).Body.Bytes(), n)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(nodePort)
	if w := do(t, h, "PUT", "/api/v1/nodes/node-1/status", n); w.Code != http.StatusOK {
		t.Fatalf("node status: %d %s", w.Code, w.Body)
	}
	runningPod(t, h, "a", true)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// TestStreamsOverWebSocketAndSPDY: exec reaches the node's SPDY-only API both from a
// WebSocket client (kubectl 1.30+, translated by miniapi) and a SPDY client (older
// kubectl); port-forward tunnels SPDY through a WebSocket, and a connection to a closed
// port fails alone.
func TestStreamsOverWebSocketAndSPDY(t *testing.T) {
	var mu sync.Mutex
	var upgrades []string // the Upgrade header of each request reaching the node
	srv := serverWithNode(t, fakeNodeRuntime{}, func(r *http.Request) {
		mu.Lock()
		upgrades = append(upgrades, r.URL.Path+" "+r.Header.Get("Upgrade"))
		mu.Unlock()
	})
	cfg := &rest.Config{Host: srv.URL}

	execURL, _ := url.Parse(srv.URL + "/api/v1/namespaces/default/pods/a/exec?command=echo&command=x&stdin=true&stdout=true&container=c")
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", execURL.String())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := remotecommand.NewSPDYExecutor(cfg, "POST", execURL)
	if err != nil {
		t.Fatal(err)
	}
	for name, ex := range map[string]remotecommand.Executor{"websocket": ws, "spdy": sp} {
		var out bytes.Buffer
		err := ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: strings.NewReader("in-" + name), Stdout: &out})
		var code utilexec.ExitError
		if !errors.As(err, &code) || code.ExitStatus() != 3 || out.String() != "cid:echo x:in-"+name {
			t.Errorf("exec over %s: %v, output %q; want exit 3 and cid:echo x:in-%s", name, err, out.String(), name)
		}
	}
	mu.Lock()
	for _, u := range upgrades {
		if strings.HasPrefix(u, "/exec/") && u != "/exec/default/a/c SPDY/3.1" {
			t.Errorf("the node got %q: want every exec as SPDY", u)
		}
	}
	mu.Unlock()

	// Port-forward over a WebSocket tunnel to an echo server on the (host-network) pod's
	// loopback, and to a closed port.
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	pfURL, _ := url.Parse(srv.URL + "/api/v1/namespaces/default/pods/a/portforward")
	dialer, err := portforward.NewSPDYOverWebsocketDialer(pfURL, cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn, protocol, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		t.Fatalf("port-forward over a WebSocket tunnel: %v", err)
	}
	defer conn.Close()
	if protocol != portforward.PortForwardProtocolV1Name {
		t.Errorf("negotiated %q", protocol)
	}
	// forward opens one connection's error and data streams (what kubectl does per local
	// connection), sends ping and returns the answer and the error stream's message.
	forward := func(port, id int) (answer, errMsg string) {
		h := http.Header{}
		h.Set(corev1.PortHeader, strconv.Itoa(port))
		h.Set(corev1.PortForwardRequestIDHeader, strconv.Itoa(id))
		h.Set(corev1.StreamType, corev1.StreamTypeError)
		errStream, err := conn.CreateStream(h)
		if err != nil {
			t.Fatalf("error stream: %v", err)
		}
		_ = errStream.Close()
		h.Set(corev1.StreamType, corev1.StreamTypeData)
		data, err := conn.CreateStream(h)
		if err != nil {
			t.Fatalf("data stream: %v", err)
		}
		defer data.Reset()
		if _, err := data.Write([]byte("ping")); err == nil {
			b := make([]byte, 4)
			n, _ := io.ReadFull(data, b) // a refused connection's stream is closed: EOF
			answer = string(b[:n])
		}
		_ = data.Close() // as the node, which ends a forward when either side ends
		msg, _ := io.ReadAll(errStream)
		return answer, string(msg)
	}
	echoPort := echo.Addr().(*net.TCPAddr).Port
	if got, msg := forward(echoPort, 0); got != "ping" || msg != "" {
		t.Fatalf("echo through the tunnel: %q, error %q", got, msg)
	}
	if got, msg := forward(closedPort, 1); got != "" || !strings.Contains(msg, "connection refused") {
		t.Errorf("closed port: answer %q, error %q; want the refusal on that connection's error stream", got, msg)
	}
	if got, msg := forward(echoPort, 2); got != "ping" || msg != "" {
		t.Errorf("the same tunnel after a connection to a closed port: %q, error %q", got, msg)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(upgrades, "\n"), "/portForward/default/a SPDY/3.1") {
		t.Errorf("the node saw no SPDY port-forward: %q", upgrades)
	}
}

// TestLogOverWebSocket: pods/log answers a WebSocket (the conformance test's
// binary.k8s.io, and base64.binary.k8s.io) with the log, as kube-apiserver does, while a
// plain GET still gets it as text.
func TestLogOverWebSocket(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "c.log")
	var log []byte
	for _, line := range []string{"container is alive", "second line"} {
		log = append(log, crilog.Entry{Time: time.Now(), Stream: crilog.Stdout, Content: []byte(line)}.Bytes()...)
	}
	if err := os.WriteFile(logPath, log, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serverWithNode(t, fakeNodeRuntime{logPath: logPath}, func(*http.Request) {})
	const want = "container is alive\nsecond line\n"
	logURL := srv.URL + "/api/v1/namespaces/default/pods/a/log?container=c"

	for protocol, decode := range map[string]func([]byte) ([]byte, error){
		"binary.k8s.io":        func(b []byte) ([]byte, error) { return b, nil },
		"base64.binary.k8s.io": func(b []byte) ([]byte, error) { return base64.StdEncoding.DecodeString(string(b)) },
	} {
		cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(logURL, "http"), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Protocol = []string{protocol}
		ws, err := websocket.DialConfig(cfg)
		if err != nil {
			t.Fatalf("%s: %v", protocol, err)
		}
		var got []byte
		for {
			var msg []byte
			if err := websocket.Message.Receive(ws, &msg); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", protocol, err)
			}
			b, err := decode(msg)
			if err != nil {
				t.Fatalf("%s: message %q: %v", protocol, msg, err)
			}
			got = append(got, b...)
		}
		ws.Close()
		if string(got) != want {
			t.Errorf("log over %s: %q, want %q", protocol, got, want)
		}
	}

	resp, err := http.Get(logURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != want {
		t.Errorf("plain GET: %d %q, want %q", resp.StatusCode, body, want)
	}
}

// TestUnreachableNode: a node nobody answers at is reported as kube-apiserver's handlers
// report it, each in its own words: an upgrade (exec, attach, port-forward, over SPDY or a
// WebSocket tunnel) by the upgrade-aware proxy's dial ("error dialing backend"), a log by
// the HTTP client (`Get "URL": ...`), both as errors without a reason (500). (nodes/proxy
// refuses this node on 127.0.0.1 before dialing it; its 503 "error trying to reach service"
// is test/e2e's TestNodeProxyingAndProxyHealth, on a lab address.)
func TestUnreachableNode(t *testing.T) {
	srv := serverWithNode(t, fakeNodeRuntime{}, func(*http.Request) {})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	var n corev1.Node
	getJSON(t, srv.URL+"/api/v1/nodes/node-1", &n)
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(closed.Addr().(*net.TCPAddr).Port)
	body, _ := json.Marshal(&n)
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/nodes/node-1/status", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("node status: %v %v", resp, err)
	}
	refused := "dial tcp " + addr + ": connect: connection refused"
	spdy := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}, "X-Stream-Protocol-Version": {"v4.channel.k8s.io"}}
	ws := func(protocol string) http.Header {
		return http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
			"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Protocol": {protocol}}
	}
	for _, tc := range []struct {
		method, path string
		header       http.Header
		code         int
		reason       metav1.StatusReason
		message      string
	}{
		{"POST", "/api/v1/namespaces/default/pods/a/exec?command=true&stdout=true", spdy, 500, "", "error dialing backend: " + refused},
		{"POST", "/api/v1/namespaces/default/pods/a/portforward?ports=80", spdy, 500, "", "error dialing backend: " + refused},
		{"GET", "/api/v1/namespaces/default/pods/a/portforward?ports=80", ws("SPDY/3.1+portforward.k8s.io"), 500, "", "error dialing backend: " + refused},
		// The node gets the log options as kube's LogLocation writes them: the container is in the path.
		{"GET", "/api/v1/namespaces/default/pods/a/log?container=c&follow=true&tailLines=2&timestamps=false", nil, 500, "",
			`Get "https://` + addr + `/containerLogs/default/a/c?follow=true&tailLines=2": ` + refused},
		{"GET", "/api/v1/namespaces/default/pods/a/log", ws("binary.k8s.io"), 500, "", `Get "https://` + addr + `/containerLogs/default/a/c": ` + refused},
	} {
		code, data, st := sendForStatus(t, tc.method, srv.URL+tc.path, tc.header)
		if code != tc.code || int(st.Code) != tc.code || st.Reason != tc.reason || st.Message != tc.message {
			t.Errorf("%s %s (upgrade %q): %d %s\nwant %d %q %q", tc.method, tc.path, tc.header.Get("Upgrade"), code, data, tc.code, tc.reason, tc.message)
		}
	}
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}
