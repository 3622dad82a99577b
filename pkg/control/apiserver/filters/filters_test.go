package filters

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/seats"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

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
		if got := LongRunning(r); got != want {
			t.Errorf("LongRunning(%s) = %v, want %v", path, got, want)
		}
	}
}

// BenchmarkFilters measures what the outer filters (panic recovery, request timeout) add
// to a request, against the bare handler in the same run: a create costs ~600 µs of CPU.
func BenchmarkFilters(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	wrapped := RecoverPanics(WithRequestTimeout(h, DefaultLimits.RequestTimeout), slog.Default())
	limited := NewInFlight(DefaultLimits).Limit(h)
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

// Writes beyond --max-mutating-requests-inflight wait for a seat in their user's queue
// instead of being refused: a controller's burst of creates is served in full, never more
// at once than the limit. A user whose queue is full gets 429 with Retry-After while
// another user's request still waits and is served.
func TestInFlightQueuesBursts(t *testing.T) {
	const seatsN = 4
	var serving, most atomic.Int32
	gate := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := serving.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-gate
		serving.Add(-1)
		w.WriteHeader(http.StatusCreated)
	})
	f := NewInFlight(Limits{MaxMutatingRequestsInflight: seatsN})
	reg := prometheus.NewRegistry()
	f.Register(reg)
	limited := f.Limit(h)
	post := func(user string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/api/v1/namespaces/default/pods", nil)
		r = r.WithContext(authn.WithUser(r.Context(), authn.User{Name: user}))
		w := httptest.NewRecorder()
		limited.ServeHTTP(w, r)
		return w
	}

	// The controller's burst fills the seats and its whole queue.
	burst := seatsN + seats.FlowQueueLimit
	codes := make(chan int, burst+1)
	for range burst {
		go func() { codes <- post("controller").Code }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for (serving.Load() < seatsN || f.mutating.Waiting() < seats.FlowQueueLimit) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	want := fmt.Sprintf(`# HELP apiserver_current_inflight_requests Requests being served, by kind (watches and streams apart).
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="mutating"} %d
# HELP apiserver_current_inqueue_requests Requests waiting for a seat, by kind.
# TYPE apiserver_current_inqueue_requests gauge
apiserver_current_inqueue_requests{request_kind="mutating"} %d
`, seatsN, seats.FlowQueueLimit)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Errorf("metrics with the seats taken and the queue full: %v", err)
	}
	if w := post("controller"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("a write beyond the controller's full queue: %d, Retry-After %q; want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	go func() { codes <- post("someone-else").Code }()
	close(gate)
	for range burst + 1 {
		if code := <-codes; code != http.StatusCreated {
			t.Errorf("a queued write: %d, want 201", code)
		}
	}
	if m := most.Load(); m != seatsN {
		t.Errorf("%d writes were served at once, want the limit %d", m, seatsN)
	}
}
