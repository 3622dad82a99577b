// Package filters holds the HTTP filters around the REST handlers, as k8s.io/apiserver's
// pkg/endpoints/filters and pkg/server/filters: the request info every later step reads,
// authorization (with impersonation), the audit log, panic recovery, the request timeout,
// the in-flight limits and warm stacks. Authentication is package authn's.
package filters

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/seats"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The filters around the resource handlers, outermost first, close to kube-apiserver's
// order (DefaultBuildHandlerChain):
//
//	panic recovery → request timeout → [warm stacks] → authentication (authn.Authenticate) →
//	authorization (Authorize; both wired by the caller) → max requests in flight →
//	metrics → field owner → routes
//
// The API server's ListenAndServeTLS puts the first two around the handler it is given;
// its Handler holds the rest.

// Limits bound what clients can make the server do.
type Limits struct {
	// RequestTimeout ends a request that is not long-running (watch, exec, attach,
	// port-forward, proxy, log) with 504 after this long (kube-apiserver's
	// --request-timeout, 60s by default); a shorter ?timeout= wins.
	RequestTimeout time.Duration
	// MaxRequestsInflight and MaxMutatingRequestsInflight bound the requests that are not
	// long-running being served at once, reads and writes apart; more get 429 with
	// Retry-After (kube-apiserver's --max-requests-inflight 400 and
	// --max-mutating-requests-inflight 200). 0 means no limit. system:masters is exempt,
	// as in kube-apiserver.
	MaxRequestsInflight, MaxMutatingRequestsInflight int
}

// DefaultLimits are kube-apiserver's defaults.
var DefaultLimits = Limits{RequestTimeout: time.Minute, MaxRequestsInflight: 400, MaxMutatingRequestsInflight: 200}

// Validate names the flag of a limit that makes no sense.
func (l Limits) Validate() error {
	var errs []error
	if l.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must be positive", l.RequestTimeout))
	}
	if l.MaxRequestsInflight < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight %d must not be negative", l.MaxRequestsInflight))
	}
	if l.MaxMutatingRequestsInflight < 0 {
		errs = append(errs, fmt.Errorf("--max-mutating-requests-inflight %d must not be negative", l.MaxMutatingRequestsInflight))
	}
	return errors.Join(errs...)
}

// RecoverPanics answers a request whose handler panicked with 500 and a Status, and logs the
// panic with its stack at error level. A response already begun cannot be turned into an
// error: its connection is dropped instead (http.ErrAbortHandler), as net/http does.
func RecoverPanics(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			stack := string(debug.Stack())
			if s, ok := v.(panicWithStack); ok { // raised again from another goroutine: its stack
				v, stack = s.value, s.stack
			}
			log.Error("a request caused a panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", stack)
			if tw.wroteHeader() {
				panic(http.ErrAbortHandler)
			}
			responsewriters.WriteError(w, apierrors.NewInternalError(errors.New("this request caused the API server to panic; look in its log for details")))
		}()
		next.ServeHTTP(tw, r)
	})
}

// panicWithStack carries a panic raised again in another goroutine than the one it
// happened in, with the stack of the one it happened in.
type panicWithStack struct {
	value any
	stack string
}

func (p panicWithStack) String() string { return fmt.Sprintf("%v\n\n%s", p.value, p.stack) }

// trackingWriter remembers whether the response has begun.
type trackingWriter struct {
	http.ResponseWriter
	mu      sync.Mutex
	written bool
}

func (t *trackingWriter) wroteHeader() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

func (t *trackingWriter) WriteHeader(code int) {
	t.mu.Lock()
	t.written = true
	t.mu.Unlock()
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.written = true
	t.mu.Unlock()
	return t.ResponseWriter.Write(b)
}

func (t *trackingWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (upgrades, deadlines).
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// Hijack serves upgrades (exec, attach, port-forward streams) of code that asserts
// http.Hijacker rather than using http.ResponseController; the response has then begun.
func (t *trackingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	t.mu.Lock()
	t.written = true
	t.mu.Unlock()
	return http.NewResponseController(t.ResponseWriter).Hijack()
}

// WithRequestTimeout ends requests that are not long-running after timeout (or the
// request's shorter ?timeout=) with 504, as kube-apiserver's timeout filter does: the
// handler's context is cancelled and a body it is still reading is cut off; what it writes
// afterwards is dropped. A response already begun has its connection dropped.
func WithRequestTimeout(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if LongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		d := timeout
		if v := r.URL.Query().Get("timeout"); v != "" {
			if asked, err := time.ParseDuration(v); err == nil && asked > 0 && asked < d {
				d = asked
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		ctx, guard := store.WithCommitGuard(ctx)
		// The body too must arrive in time, also the rest of one the handler left unread,
		// which net/http reads after it to reuse the connection.
		// (A second later than the context: a handler still reading when the request times
		// out gets the timeout, not a read error of its own.) A body must have arrived
		// within BodyTimeout, so a client trickling it does not hold its connection for the
		// whole request timeout; once it has, the request's own deadline is back.
		rc := http.NewResponseController(w)
		deadline := time.Now().Add(d + time.Second)
		if r.ContentLength != 0 && BodyTimeout < d+time.Second {
			_ = rc.SetReadDeadline(time.Now().Add(BodyTimeout))
			r.Body = &bodyRead{ReadCloser: r.Body, done: func() { _ = rc.SetReadDeadline(deadline) }}
		} else {
			_ = rc.SetReadDeadline(deadline)
		}
		tw := &timeoutWriter{w: w, header: w.Header().Clone()}
		done := make(chan any, 1)
		go func() {
			defer func() {
				v := recover()
				if v != nil && !isAbort(v) {
					if _, ok := v.(panicWithStack); !ok {
						v = panicWithStack{value: v, stack: string(debug.Stack())}
					}
				}
				done <- v
			}()
			next.ServeHTTP(tw, r.WithContext(ctx))
		}()
		select {
		case v := <-done:
			if v != nil {
				panic(v)
			}
		case <-ctx.Done():
			if !guard.TimeOut() {
				// A write of this request is being committed: it is answered for real.
				if v := <-done; v != nil {
					panic(v)
				}
				return
			}
			begun := tw.timeOut()
			// A handler blocked reading a slow client's body gets an error now.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			if begun {
				select {
				case v := <-done: // it answered in full (its own 504 too): that answer stands
					if v != nil {
						panic(v)
					}
					return
				default:
					panic(http.ErrAbortHandler)
				}
			}
			responsewriters.WriteError(w, TimeoutError(ctx))
		}
	})
}

// timedOut tells whether the request of ctx timed out: its client got 504.
func timedOut(ctx context.Context) bool {
	g := store.CommitGuardFrom(ctx)
	return g != nil && g.TimedOut()
}

// TimeOutNow marks the request of ctx timed out once its deadline has passed, unless one of
// its writes is being committed, and tells whether it timed out: a handler that met the
// deadline before the timeout filter did (a 500 "context deadline exceeded" of its own)
// answers the filter's 504 instead, as kube-apiserver's handlers do.
func TimeOutNow(ctx context.Context) bool {
	g := store.CommitGuardFrom(ctx)
	if g == nil {
		return false
	}
	if ctx.Err() == nil {
		return g.TimedOut()
	}
	return g.TimeOut()
}

// BodyTimeout bounds how long a client may take to send a request's body once its headers
// are in (a slow-loris client trickling the body), as the server's header timeout bounds
// the headers.
const BodyTimeout = 10 * time.Second

// bodyRead calls done once its body has been read to the end.
type bodyRead struct {
	io.ReadCloser
	done func()
	once sync.Once
}

func (b *bodyRead) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.done)
	}
	return n, err
}

// TimeoutError is the 504 a request that ran past its deadline is answered with.
func TimeoutError(ctx context.Context) error {
	return apierrors.NewTimeoutError("request did not complete within requested timeout - "+ctx.Err().Error(), 0)
}

// answerTimedOut makes a handler that answers after its request timed out (when
// WithRequestTimeout has sent the client its 504 and drops what the handler writes) answer
// that 504 instead, so that the filters between the two (the audit log) record the code
// the client saw, as kube-apiserver's handlers answer a timed-out request with 504.
func answerTimedOut(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if LongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, ctx: r.Context()}, r)
	})
}

// deadlineWriter replaces a response begun after the request timed out with the 504.
type deadlineWriter struct {
	http.ResponseWriter
	ctx             context.Context
	begun, timedOut bool
}

func (d *deadlineWriter) WriteHeader(code int) {
	if d.begun {
		return
	}
	d.begun = true
	if timedOut(d.ctx) {
		d.timedOut = true
		responsewriters.WriteError(d.ResponseWriter, TimeoutError(d.ctx))
		return
	}
	d.ResponseWriter.WriteHeader(code)
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	if d.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	return d.ResponseWriter.Write(b)
}

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

func isAbort(v any) bool {
	err, ok := v.(error)
	return ok && errors.Is(err, http.ErrAbortHandler)
}

// timeoutWriter passes a handler's response on until the request times out, and drops it
// after. The handler has headers of its own, copied out when its response begins, as in
// kube-apiserver's timeout filter: the real ones must not be touched once the filter has
// answered (net/http's HTTP/2 server panics on Header after the handler returned).
type timeoutWriter struct {
	w        http.ResponseWriter
	header   http.Header
	mu       sync.Mutex
	timedOut bool
	begun    bool
}

func (t *timeoutWriter) Header() http.Header { return t.header }

func (t *timeoutWriter) WriteHeader(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.begin(code)
}

// begin sends the handler's headers and status unless the response has begun or timed out.
func (t *timeoutWriter) begin(code int) {
	if t.timedOut || t.begun {
		return
	}
	t.begun = true
	dst := t.w.Header()
	clear(dst)
	maps.Copy(dst, t.header)
	t.w.WriteHeader(code)
}

func (t *timeoutWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	t.begin(http.StatusOK)
	return t.w.Write(b)
}

func (t *timeoutWriter) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f, ok := t.w.(http.Flusher); ok && !t.timedOut {
		f.Flush()
	}
}

// timeOut marks the request timed out and tells whether its response had begun.
func (t *timeoutWriter) timeOut() (begun bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timedOut = true
	return t.begun
}

// InFlight bounds the requests that are not long-running being served at once, reads and
// writes apart; a request that finds its kind's seats taken waits its turn in its user's
// queue (package seats).
type InFlight struct {
	readonly, mutating *seats.Pool // nil: no limit
}

// NewInFlight is the in-flight limits of l (none where l's is 0).
func NewInFlight(l Limits) *InFlight {
	f := &InFlight{}
	if l.MaxRequestsInflight > 0 {
		f.readonly = seats.New(l.MaxRequestsInflight)
	}
	if l.MaxMutatingRequestsInflight > 0 {
		f.mutating = seats.New(l.MaxMutatingRequestsInflight)
	}
	return f
}

// Register exports the seats taken and the requests waiting, by kind, under
// kube-apiserver's metric names.
func (f *InFlight) Register(reg prometheus.Registerer) {
	for kind, pool := range map[string]*seats.Pool{"readOnly": f.readonly, "mutating": f.mutating} {
		if pool == nil {
			continue
		}
		labels := prometheus.Labels{"request_kind": kind}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apiserver_current_inflight_requests", ConstLabels: labels,
				Help: "Requests being served, by kind (watches and streams apart)."}, func() float64 { return float64(pool.Serving()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apiserver_current_inqueue_requests", ConstLabels: labels,
				Help: "Requests waiting for a seat, by kind."}, func() float64 { return float64(pool.Waiting()) }))
	}
}

// Limit serves a request once it has a seat, and refuses it with 429 and Retry-After when
// its user's queue is full or it waited too long, as kube-apiserver's priority and
// fairness filter does.
func (f *InFlight) Limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pool := f.readonly
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			pool = f.mutating
		}
		if pool == nil || LongRunning(r) || privileged(r) {
			next.ServeHTTP(w, r)
			return
		}
		u, _ := authn.UserFrom(r.Context())
		release, err := pool.Acquire(r.Context(), u.Name)
		if err != nil {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			if r.ContentLength != 0 { // not worth reading: net/http would before answering
				w.Header().Set("Connection", "close")
			}
			responsewriters.WriteError(w, apierrors.NewTooManyRequests("Too many requests, please try again later.", retryAfterSeconds))
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// retryAfterSeconds is what kube-apiserver tells a client refused for too many requests.
const retryAfterSeconds = 1

// privileged tells whether the request's user is in system:masters, which kube-apiserver's
// in-flight limits do not count.
func privileged(r *http.Request) bool {
	u, ok := authn.UserFrom(r.Context())
	return ok && slices.Contains(u.Groups, "system:masters")
}
