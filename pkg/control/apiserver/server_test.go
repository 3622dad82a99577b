package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A handler's panic answers 500 with a Status and is logged at error level with the stack
// of the goroutine it happened in; a handler that takes too long is answered 504; watches
// and streams are not timed out.
func TestPanicsAndTimeouts(t *testing.T) {
	var logged bytes.Buffer
	s := &Server{log: slog.New(slog.NewJSONHandler(&logged, nil)), limits: filters.Limits{RequestTimeout: 200 * time.Millisecond}}
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
