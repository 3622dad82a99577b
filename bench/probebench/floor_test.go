package main

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestFloorClient runs both floor clients for a little over a second against an HTTP
// server and a gRPC health server on loopback: every probe succeeds while both are
// healthy, and an unhealthy server's probes fail.
func TestFloorClient(t *testing.T) {
	var code atomic.Int32 // what /healthz answers
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Header.Get("User-Agent") != "kube-probe/1.32" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(int(code.Load()))
	})}
	go hs.Serve(hl)
	defer hs.Close()
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthServer := health.NewServer()
	healthpb.RegisterHealthServer(gs, healthServer)
	go gs.Serve(gl)
	defer gs.Stop()
	ports := floorPorts{http: hl.Addr().(*net.TCPAddr).Port, grpc: gl.Addr().(*net.TCPAddr).Port}
	ips := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1")}

	for _, mode := range []string{"bare", "workers"} {
		code.Store(http.StatusOK)
		healthServer.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		ok, failed, first, err := floorClient(mode, ips, ports, 1300*time.Millisecond)
		if err != nil || ok < 6 || failed != 0 {
			t.Errorf("%s, healthy servers: %d probes succeeded, %d failed (first: %s), %v; want at least 6 and none", mode, ok, failed, first, err)
		}

		healthServer.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		ok, failed, first, _ = floorClient(mode, ips, ports, 1300*time.Millisecond)
		if ok < 4 || failed < 2 || !strings.Contains(first, "NOT_SERVING") && !strings.Contains(first, "gRPC health") {
			t.Errorf("%s, gRPC NOT_SERVING: %d succeeded, %d failed (first: %s); want the 2 gRPC probes failing", mode, ok, failed, first)
		}

		healthServer.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		code.Store(http.StatusInternalServerError)
		ok, failed, first, _ = floorClient(mode, ips, ports, 1300*time.Millisecond)
		if ok < 4 || failed < 2 || !strings.Contains(first, "500") {
			t.Errorf("%s, HTTP 500: %d succeeded, %d failed (first: %s); want the 2 httpGet probes failing", mode, ok, failed, first)
		}
	}
	if _, _, _, err := floorClient("other", ips, ports, time.Millisecond); err == nil {
		t.Error("an unknown floor client gave no error")
	}
}
