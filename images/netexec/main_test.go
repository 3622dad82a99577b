package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/health"
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

func TestHTTP(t *testing.T) {
	s := &server{log: slog.New(slog.DiscardHandler), exit: make(chan int, 1), grpcHealth: health.NewServer()}
	s.setHealth(http.StatusOK)
	srv := httptest.NewServer(s.routes())
	defer srv.Close()
	hostname, _ := os.Hostname()

	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/hostname", 200, hostname},
		{"/echo?msg=hello%20there", 200, "hello there"},
		{"/healthz", 200, "ok"},
		{"/sethealth?code=503", 200, "healthz now answers 503"},
		{"/healthz", 503, "unhealthy (503)"},
		{"/sethealth?code=99", 400, ""},
		{"/exit?code=300", 400, ""},
		{"/exit?code=4", 200, "exiting with 4"},
	} {
		code, body := get(t, srv.URL+tc.path)
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
		}
	}
	select {
	case code := <-s.exit:
		if code != 4 {
			t.Errorf("exit requested with %d, want 4", code)
		}
	default:
		t.Error("/exit did not request an exit")
	}
	if _, body := get(t, srv.URL+"/clientip"); !strings.HasPrefix(body, "127.0.0.1:") {
		t.Errorf("/clientip = %q, want the loopback caller", body)
	}
}

func TestUDP(t *testing.T) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go serveUDP(conn, slog.New(slog.DiscardHandler))

	client, err := net.Dial("udp", conn.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	hostname, _ := os.Hostname()
	for send, want := range map[string]string{"hostname\n": hostname, "ping 42": "ping 42"} {
		if _, err := client.Write([]byte(send)); err != nil {
			t.Fatal(err)
		}
		client.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1024)
		n, err := client.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("UDP %q answered %q, %v; want %q", send, buf[:n], err, want)
		}
	}
}

// TestGRPCHealthFollowsSetHealth: the gRPC health status is what /healthz answers.
func TestGRPCHealthFollowsSetHealth(t *testing.T) {
	s := &server{log: slog.New(slog.DiscardHandler), exit: make(chan int, 1), grpcHealth: health.NewServer()}
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		resp, err := s.grpcHealth.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status
	}
	s.setHealth(http.StatusOK)
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("after 200: %s", got)
	}
	s.setHealth(http.StatusServiceUnavailable)
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("after 503: %s", got)
	}
}
