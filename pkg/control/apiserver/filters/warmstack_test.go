package filters

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWarmStacksReuseWorkers(t *testing.T) {
	h := OnWarmStacks(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}), time.Minute, nil)
	const requests = 20
	for range requests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != http.StatusTeapot {
			t.Fatalf("status %d, want the handler's %d", rec.Code, http.StatusTeapot)
		}
		time.Sleep(time.Millisecond) // the worker goes back to waiting
	}
	if n := h.started.Load(); n > requests/4 {
		t.Errorf("%d workers started for %d sequential requests, want them reused", n, requests)
	}
}

func TestWarmStacksServeConcurrentRequests(t *testing.T) {
	const requests = 50
	var arrived sync.WaitGroup
	arrived.Add(requests)
	release := make(chan struct{})
	h := OnWarmStacks(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release // every request holds its worker until all have one
	}), time.Minute, nil)
	var served sync.WaitGroup
	for range requests {
		served.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)) })
	}
	arrived.Wait()
	close(release)
	served.Wait()
	if n := h.started.Load(); n < requests {
		t.Errorf("%d workers for %d requests in flight at once", n, requests)
	}
}

func TestWarmStacksRaisePanicsInTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any
		check func(any) bool
	}{
		{"a bug", "boom", func(v any) bool {
			p, ok := v.(panicWithStack)
			return ok && p.value == "boom" && strings.Contains(p.stack, "warmstack_test.go")
		}},
		{"an aborted response", http.ErrAbortHandler, func(v any) bool { return v == http.ErrAbortHandler }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := OnWarmStacks(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(tc.value) }), time.Minute, nil)
			defer func() {
				if v := recover(); !tc.check(v) {
					t.Errorf("caller got panic %v, want %v (with the worker's stack for a bug)", v, tc.value)
				}
			}()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
			t.Error("no panic in the caller")
		})
	}
}
