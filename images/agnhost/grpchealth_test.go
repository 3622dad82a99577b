package main

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestGRPCHealthChecking: the service is SERVING on --port until /make-not-serving on
// --http-port, and again after /make-serving, as the GRPC probe conformance tests use it.
func TestGRPCHealthChecking(t *testing.T) {
	bin := buildAgnhost(t)
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	port, httpPort := free(), free()
	server := exec.Command(bin, "grpc-health-checking", "--port", port, "--http-port", httpPort)
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer server.Process.Kill()
	conn, err := grpc.NewClient("127.0.0.1:"+port, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	status := func() healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return healthpb.HealthCheckResponse_UNKNOWN
		}
		return resp.Status
	}
	wait := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		var got healthpb.HealthCheckResponse_ServingStatus
		for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(100 * time.Millisecond) {
			if got = status(); got == want {
				return
			}
		}
		t.Fatalf("health %v, want %v", got, want)
	}
	wait(healthpb.HealthCheckResponse_SERVING)
	for path, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
		"/make-not-serving": healthpb.HealthCheckResponse_NOT_SERVING,
		"/make-serving":     healthpb.HealthCheckResponse_SERVING,
	} {
		resp, err := http.Get("http://127.0.0.1:" + httpPort + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		wait(want)
	}
}
