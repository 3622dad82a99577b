package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func testServer(t *testing.T) (*server, *httptest.Server) {
	s := newServer(slog.New(slog.DiscardHandler), 8080)
	s.uploadDir = t.TempDir()
	srv := httptest.NewServer(s.routes())
	t.Cleanup(srv.Close)
	return s, srv
}

func TestHTTP(t *testing.T) {
	s, srv := testServer(t)
	hostname, _ := os.Hostname()
	if code, _ := get(t, srv.URL+"/healthz"); code != http.StatusPreconditionFailed {
		t.Errorf("/healthz before the UDP server listens = %d, want 412", code)
	}
	s.ready.Store(true)

	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/hostname", 200, hostname},
		{"/hostName", 200, hostname},
		{"/serverport", 200, "8080"},
		{"/echo?msg=hello%20there", 200, "hello there"},
		{"/echo?msg=teapot&code=418", 418, "teapot"},
		{"/header?key=X-Test", 200, "yes"},
		{"/shell?cmd=echo%20out%3B%20exit%203", 200, `{"error":"exit status 3","output":"out\n"}`},
		{"/shell?shellCommand=true", 200, `{}`},
		{"/dial?host=127.0.0.1&port=1", 400, ""},
		{"/healthz", 200, "ok"},
		{"/readyz", 200, "ok"},
		{"/sethealth?code=503", 200, "healthz now answers 503"},
		{"/healthz", 503, "unhealthy (503)"},
		{"/sethealth?code=99", 400, ""},
		{"/exit?code=300", 400, ""},
		{"/exit?timeout=soon", 400, ""},
		{"/exit?code=4&timeout=2s", 200, "exiting with 4"},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
		req.Header.Set("X-Test", "yes")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || (tc.body != "" && string(body) != tc.body) {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
	}
	// The reply is flushed before the exit is asked for (requestExit), so the client may
	// read it first.
	select {
	case req := <-s.exit:
		if req != (shutdownRequest{code: 4, timeout: 2 * time.Second}) {
			t.Errorf("exit requested with %+v, want code 4, timeout 2s", req)
		}
	case <-time.After(5 * time.Second):
		t.Error("/exit did not request an exit")
	}
	if _, body := get(t, srv.URL+"/clientip"); !strings.HasPrefix(body, "127.0.0.1:") {
		t.Errorf("/clientip = %q, want the loopback caller", body)
	}
	if _, body := get(t, srv.URL+"/"); !strings.HasPrefix(body, "NOW: ") {
		t.Errorf("/ = %q, want NOW: <time>", body)
	}
	var headers map[string][]string
	if _, body := get(t, srv.URL+"/header"); json.Unmarshal([]byte(body), &headers) != nil || headers["User-Agent"] == nil {
		t.Errorf("/header = %q, want every header as JSON", body)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(srv.URL + "/redirect?location=/echo%3Fmsg=foo&code=307")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 307 || resp.Header.Get("Location") != "/echo?msg=foo" {
		t.Errorf("/redirect = %d to %q, want 307 to /echo?msg=foo", resp.StatusCode, resp.Header.Get("Location"))
	}
	s.terminating.Store(true)
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || body != "shutting down" {
		t.Errorf("/readyz after SIGTERM = %d %q, want 503", code, body)
	}
}

// An /exit reply must be whole once flushed: main exits at once after the request, and a
// chunked reply would lack its last chunk (the runtime test's wget then failed).
func TestExitReplyIsWholeWhenFlushed(t *testing.T) {
	_, srv := testServer(t)
	resp, err := http.Get(srv.URL + "/exit?code=3")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 || string(body) != "exiting with 3" {
		t.Errorf("/exit reply: length %d, transfer encoding %v, body %q; want exiting with 3 with its length", resp.ContentLength, resp.TransferEncoding, body)
	}
}

func TestUpload(t *testing.T) {
	s, srv := testServer(t)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "x")
	fw.Write([]byte("content"))
	mw.Close()
	resp, err := http.Post(srv.URL+"/upload", mw.FormDataContentType(), &form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("/upload = %d, %v, %v", resp.StatusCode, out, err)
	}
	data, err := os.ReadFile(out["output"])
	if err != nil || string(data) != "content" || !strings.HasPrefix(out["output"], s.uploadDir) {
		t.Errorf("uploaded %s: %q, %v", out["output"], data, err)
	}
}

func TestHTTPOverride(t *testing.T) {
	s := newServer(slog.New(slog.DiscardHandler), 8080)
	srv := httptest.NewServer(overrideHandler("/echo?msg=overridden", s.routes()))
	defer srv.Close()
	if _, body := get(t, srv.URL+"/hostname"); body != "overridden" {
		t.Errorf("GET /hostname with --http-override = %q, want overridden", body)
	}
}

func listenUDP(t *testing.T) net.PacketConn {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go serveUDP(conn, conn.LocalAddr().(*net.UDPAddr).Port, slog.New(slog.DiscardHandler))
	return conn
}

func TestUDP(t *testing.T) {
	conn := listenUDP(t)
	client, err := net.Dial("udp", conn.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	hostname, _ := os.Hostname()
	port := fmt.Sprint(conn.LocalAddr().(*net.UDPAddr).Port)
	for _, tc := range []struct{ send, want string }{
		{"ping 42", ""}, // unknown: no answer, the next one must be the hostname's
		{"hostname\n", hostname},
		{"ECHO Hello There", "hello there"},
		{"clientip", client.LocalAddr().String()},
		{"serverport", port},
	} {
		if _, err := client.Write([]byte(tc.send)); err != nil {
			t.Fatal(err)
		}
		if tc.want == "" {
			continue
		}
		client.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1024)
		n, err := client.Read(buf)
		if err != nil || string(buf[:n]) != tc.want {
			t.Errorf("UDP %q answered %q, %v; want %q", tc.send, buf[:n], err, tc.want)
		}
	}
}

// TestDial: /dial's JSON, byte for byte as upstream's, for HTTP and UDP targets and for
// a target that does not answer.
func TestDial(t *testing.T) {
	_, target := testServer(t)
	_, srv := testServer(t)
	udp := listenUDP(t)
	hostname, _ := os.Hostname()
	tu, _ := url.Parse(target.URL)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closed.Close()
	dial := func(query string) (int, string) { return get(t, srv.URL+"/dial?"+query) }

	for _, tc := range []struct {
		query string
		code  int
		body  string
	}{
		{"request=hostname&protocol=http&host=127.0.0.1&port=" + tu.Port() + "&tries=2", 200,
			fmt.Sprintf(`{"responses":[%q,%q]}`, hostname, hostname)},
		{"request=echo%3Fmsg%3Dhi&host=127.0.0.1&port=" + tu.Port(), 200, `{"responses":["hi"]}`},
		{"request=hostname&protocol=udp&host=127.0.0.1&port=" + fmt.Sprint(udp.LocalAddr().(*net.UDPAddr).Port), 200,
			fmt.Sprintf(`{"responses":[%q]}`, hostname)},
		{"request=hostname&protocol=sctp&host=127.0.0.1&port=1", 400, ""},
		{"request=hostname&host=127.0.0.1&port=x", 400, ""},
		{"request=hostname&host=127.0.0.1&port=1&tries=many", 400, ""},
	} {
		code, body := dial(tc.query)
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("/dial?%s = %d %s, want %d %s", tc.query, code, body, tc.code, tc.body)
		}
	}
	code, body := dial("request=hostname&host=127.0.0.1&port=" + fmt.Sprint(closed.Addr().(*net.TCPAddr).Port))
	var out map[string][]string
	if code != 200 || json.Unmarshal([]byte(body), &out) != nil || len(out["errors"]) != 1 || out["responses"] != nil {
		t.Errorf("/dial of a closed port = %d %s, want only one error", code, body)
	}
}

func TestParseAddresses(t *testing.T) {
	got, err := parseAddresses("10.0.0.2,127.0.0.1,10.0.0.2")
	if err != nil || strings.Join(got, ",") != "10.0.0.2,127.0.0.1" {
		t.Errorf("parseAddresses = %v, %v", got, err)
	}
	if _, err := parseAddresses("10.0.0.2,nonsense"); err == nil {
		t.Error("parseAddresses accepted a non-IP")
	}
	if got, _ := parseAddresses(""); len(got) != 1 || got[0] != "" {
		t.Errorf(`parseAddresses("") = %q, want every address`, got)
	}
}

// TestGRPCHealthFollowsSetHealth: the gRPC health status is what /healthz answers.
func TestGRPCHealthFollowsSetHealth(t *testing.T) {
	s := newServer(slog.New(slog.DiscardHandler), 8080)
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		resp, err := s.grpcHealth.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status
	}
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("at start: %s", got)
	}
	s.setHealth(http.StatusServiceUnavailable)
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("after 503: %s", got)
	}
}

// TestEchoLogsUpstreamsLine: /echo logs "GET /echo?msg=M&code=C" as upstream's netexec,
// the line the lifecycle hook conformance tests look for in the handler pod's log.
func TestEchoLogsUpstreamsLine(t *testing.T) {
	var out bytes.Buffer
	log.SetOutput(&out)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	_, srv := testServer(t)
	get(t, srv.URL+"/echo?msg=prestop")
	if !strings.Contains(out.String(), "GET /echo?msg=prestop&code=\n") {
		t.Errorf("log %q lacks upstream's line", out.String())
	}
}
