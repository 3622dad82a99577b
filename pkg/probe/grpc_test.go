package probe

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func listen(t *testing.T) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// serveHealth serves grpc-go's health service on l, made with opts, until the test ends.
func serveHealth(t *testing.T, l net.Listener, opts ...grpc.ServerOption) *health.Server {
	s := grpc.NewServer(opts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return hs
}

// TestGRPCAgainstGRPCServer checks the handler's one-call HTTP/2 exchange against grpc-go's
// own server: a connection per probe, the kubelet's User-Agent and the probe's deadline
// reach the server, and each answer gets the kubelet's result and message.
func TestGRPCAgainstGRPCServer(t *testing.T) {
	l := &countingListener{Listener: listen(t)}
	var agent atomic.Value
	var deadline atomic.Int64
	hs := serveHealth(t, l, grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		agent.Store(strings.Join(md.Get("user-agent"), ","))
		if d, ok := ctx.Deadline(); ok {
			deadline.Store(int64(time.Until(d)))
		}
		return h(ctx, req)
	}))
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	addr := l.Addr().String()

	for _, tc := range []struct {
		service string
		want    Result
		out     string
	}{
		{"", Success, "service healthy"},
		{"db", Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"nope", Failure, "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		r, out := GRPC(ctx, addr, tc.service)
		cancel()
		if r != tc.want || out != tc.out {
			t.Errorf("GRPC(%q) = %v %q, want %v %q", tc.service, r, out, tc.want, tc.out)
		}
	}
	if n := l.accepted.Load(); n != 3 {
		t.Errorf("3 probes opened %d connections, want one each", n)
	}
	if ua, _ := agent.Load().(string); !strings.HasPrefix(ua, "kube-probe/1.32 grpc-go/") {
		t.Errorf("User-Agent %q, want the kubelet's", ua)
	}
	if d := time.Duration(deadline.Load()); d <= time.Second || d > 3*time.Second {
		t.Errorf("the server saw a deadline %v away, want the probe's (3s)", d)
	}
}

func TestGRPCFailures(t *testing.T) {
	// A gRPC server without the health service.
	bare := listen(t)
	s := grpc.NewServer()
	go s.Serve(bare)
	defer s.Stop()
	// An HTTP/1 server: no HTTP/2 settings ever come.
	h1 := listen(t)
	go http.Serve(h1, http.NotFoundHandler())
	// A closed port.
	closed := listen(t)
	closedAddr := closed.Addr().String()
	closed.Close()

	for _, tc := range []struct {
		name, addr, out string
	}{
		{"no health service", bare.Addr().String(), "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"not gRPC", h1.Addr().String(), `error: failed to connect service at "` + h1.Addr().String() + `": `},
		{"refused", closedAddr, `error: failed to connect service at "` + closedAddr + `": dial tcp ` + closedAddr + `: connect: connection refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if r, out := GRPC(ctx, tc.addr, ""); r != Failure || !strings.HasPrefix(out, tc.out) {
				t.Errorf("GRPC = %v %q, want failure %q", r, out, tc.out)
			}
		})
	}
}

// TestGRPCSlowCall: a server that takes the connection but never answers the call fails
// the probe when its timeout ends, with the kubelet's message for an unfinished call.
func TestGRPCSlowCall(t *testing.T) {
	l := listen(t)
	release := make(chan struct{})
	defer close(release)
	serveHealth(t, l, grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		<-release
		return h(ctx, req)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if r, out := GRPC(ctx, l.Addr().String(), ""); r != Failure || out != "timeout: health rpc did not complete within 1s" {
		t.Errorf("GRPC = %v %q", r, out)
	}
}

// pastDeadline is a context whose deadline has passed but whose timer has not fired yet,
// as on a loaded node.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// An error that comes once the deadline has passed is the probe's timeout, even before the
// context says so: a server's RST_STREAM CANCEL for the same deadline may come first.
func TestTimedOutByTheClock(t *testing.T) {
	cancelled := status.Error(codes.Canceled, "stream terminated by RST_STREAM with error code: CANCEL")
	if !timedOut(pastDeadline{context.Background()}, cancelled) {
		t.Error("an error after the deadline is not a timeout")
	}
	if timedOut(context.Background(), cancelled) {
		t.Error("an error without a deadline is a timeout")
	}
}
