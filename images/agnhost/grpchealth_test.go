package main

import (
	"context"
	"net/http"
	"os/exec"
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
	var client healthpb.HealthClient
	status := func() healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return healthpb.HealthCheckResponse_UNKNOWN
		}
		return resp.Status
	}
	ports := serveOnFreePorts(t, 2, func(ports []string) *exec.Cmd {
		conn, err := grpc.NewClient("127.0.0.1:"+ports[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		client = healthpb.NewHealthClient(conn)
		return exec.Command(bin, "grpc-health-checking", "--port", ports[0], "--http-port", ports[1])
	}, func(ports []string) bool {
		resp, err := http.Get("http://127.0.0.1:" + ports[1] + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return status() == healthpb.HealthCheckResponse_SERVING
	})
	httpPort := ports[1]
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
	for _, step := range []struct {
		path string
		want healthpb.HealthCheckResponse_ServingStatus
	}{
		{"/make-not-serving", healthpb.HealthCheckResponse_NOT_SERVING},
		{"/make-serving", healthpb.HealthCheckResponse_SERVING},
	} {
		resp, err := http.Get("http://127.0.0.1:" + httpPort + step.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		wait(step.want)
	}
}
