package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A handler's panic answers 500 with a Status and is logged at error level with the stack
// of the goroutine it happened in; a handler that takes too long is answered 504; watches
// and streams are not timed out.
func TestPanicsAndTimeouts(t *testing.T) {
	var logged bytes.Buffer
	s := &Server{log: slog.New(slog.NewJSONHandler(&logged, nil)), limits: Limits{RequestTimeout: 200 * time.Millisecond}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/namespaces/default/pods/boom", func(http.ResponseWriter, *http.Request) { explode() })
	mux.HandleFunc("/api/v1/namespaces/default/pods/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
			w.WriteHeader(http.StatusOK)
		}
	})
	mux.HandleFunc("/api/v1/namespaces/default/pods/slow/log", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := s.newHTTPServer(ctx, mux, time.Second)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	get := func(path string) (int, metav1.Status) {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st metav1.Status
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return resp.StatusCode, st
	}

	if code, st := get("/api/v1/namespaces/default/pods/boom"); code != http.StatusInternalServerError || st.Kind != "Status" || st.Reason != metav1.StatusReasonInternalError {
		t.Errorf("panicking handler: %d %+v", code, st)
	}
	var entry map[string]any
	if err := json.Unmarshal(logged.Bytes(), &entry); err != nil {
		t.Fatalf("log: %v: %s", err, logged.Bytes())
	}
	if entry["level"] != "ERROR" || entry["panic"] != "kaboom" || !strings.Contains(entry["stack"].(string), "explode") {
		t.Errorf("panic log entry: %v", entry)
	}
	start := time.Now()
	if code, st := get("/api/v1/namespaces/default/pods/slow"); code != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout {
		t.Errorf("slow handler: %d %+v", code, st)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the timeout took %s", took)
	}
	if code, _ := get("/api/v1/namespaces/default/pods/slow?timeout=50ms"); code != http.StatusGatewayTimeout {
		t.Errorf("shorter ?timeout=: %d", code)
	}
	if code, _ := get("/api/v1/namespaces/default/pods/slow/log"); code != http.StatusOK {
		t.Errorf("a long-running request was timed out: %d", code)
	}
}

func explode() { panic("kaboom") }

func TestLongRunning(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/pods?watch=1":                           true,
		"/api/v1/watch/pods":                             true,
		"/api/v1/namespaces/a/pods/b/exec?command=sh":    true,
		"/api/v1/namespaces/a/pods/b/log":                true,
		"/api/v1/namespaces/a/pods/b/portforward":        true,
		"/api/v1/nodes/n/proxy/metrics":                  true,
		"/api/v1/namespaces/a/pods/b":                    false,
		"/api/v1/namespaces/a/pods/b/status":             false,
		"/apis/apps/v1/namespaces/a/deployments/b/scale": false,
		"/api/v1/namespaces/a":                           false,
		"/healthz":                                       false,
	} {
		r, _ := http.NewRequest("GET", path, nil)
		if got := longRunning(r); got != want {
			t.Errorf("longRunning(%s) = %v, want %v", path, got, want)
		}
	}
}

// BenchmarkFilters measures what the outer filters (panic recovery, request timeout) add
// to a request, against the bare handler in the same run: a create costs ~600 µs of CPU.
func BenchmarkFilters(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	s := &Server{log: slog.Default(), limits: DefaultLimits}
	wrapped := recoverPanics(withRequestTimeout(h, s.limits.RequestTimeout), s.log)
	limited := newInFlight(DefaultLimits).limit(h)
	req := httptest.NewRequest("POST", "/api/v1/namespaces/default/pods", nil)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"bare", h}, {"recovery+timeout", wrapped}, {"inflight", limited}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
