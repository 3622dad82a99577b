package probe

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestHTTPHandler(t *testing.T) {
	var agent, host, encoding string
	connections := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent, host, encoding = r.UserAgent(), r.Host, r.Header.Get("Accept-Encoding")
		connections[r.RemoteAddr] = true
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte("fine"))
		case "/bad":
			w.WriteHeader(500)
		case "/same":
			http.Redirect(w, r, "/bad", http.StatusFound)
		case "/away":
			http.Redirect(w, r, "http://elsewhere.invalid/x", http.StatusFound)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, tc := range []struct {
		path string
		want Result
		out  string
	}{
		{"/ok", Success, "fine"},
		{"/bad", Failure, "HTTP probe failed with statuscode: 500"},
		{"/same", Failure, "HTTP probe failed with statuscode: 500"}, // same host: followed
		{"/away", Warning, "Probe terminated redirects, Response body: <a href=\"http://elsewhere.invalid/x\">Found</a>"}, // another host: not followed, a warning
	} {
		r, out := HTTP(context.Background(), u.JoinPath(tc.path), []corev1.HTTPHeader{{Name: "Host", Value: "probe.example"}})
		if r != tc.want || !strings.Contains(out, tc.out) {
			t.Errorf("GET %s = %v %q, want %v %q", tc.path, r, out, tc.want, tc.out)
		}
	}
	if agent != "kube-probe/1.32" || host != "probe.example" || encoding != "" {
		t.Errorf("User-Agent %q, Host %q, Accept-Encoding %q; want the kubelet's (no compression)", agent, host, encoding)
	}
	// Keep-alives are off: each of the 5 requests above (one same-host redirect followed) had a connection of its own.
	if len(connections) != 5 {
		t.Errorf("5 requests came over %d connections", len(connections))
	}
	// Through Run: the port by the container port's name, the host from the pod IP.
	_, port, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(port)
	c := &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(n)}}}
	p := &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("web")}}}
	if r, out := Run(context.Background(), p, c, "127.0.0.1", nil); r != Success {
		t.Errorf("Run httpGet by port name = %v %q", r, out)
	}
	// A port name the container lacks is an error, not a failure (the kubelet's
	// ResolveContainerPort tries it as a number last).
	p.HTTPGet.Port = intstr.FromString("nope")
	if r, out := Run(context.Background(), p, c, "127.0.0.1", nil); r != Unknown || out != `strconv.Atoi: parsing "nope": invalid syntax` {
		t.Errorf("unknown port name = %v %q", r, out)
	}
}

func TestTCPAndGRPCHandlers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if r, _ := TCP(context.Background(), addr); r != Success {
		t.Errorf("TCP to a listener = %v", r)
	}
	l.Close()
	if r, out := TCP(context.Background(), addr); r != Failure || !strings.Contains(out, "refused") {
		t.Errorf("TCP to a closed port = %v %q", r, out)
	}

	gl := listen(t)
	hs := serveHealth(t, gl)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, out := GRPC(ctx, gl.Addr().String(), ""); r != Success {
		t.Errorf("grpc health of the server = %v %q", r, out)
	}
	if r, out := GRPC(ctx, gl.Addr().String(), "db"); r != Failure || !strings.Contains(out, "NOT_SERVING") {
		t.Errorf("grpc health of a service not serving = %v %q", r, out)
	}
	// A server that never answers: the message names the probe's timeout, as the kubelet's.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	if r, out := GRPC(short, silent.Addr().String(), ""); r != Failure || !strings.Contains(out, "within 1s") {
		t.Errorf("grpc health of a silent server = %v %q, want a failure within 1s", r, out)
	}
}

// TestWorkerThresholds drives a worker step by step: failureThreshold failures in a row flip
// it to failure, successThreshold successes back (a warning is a success, as the kubelet
// counts it); a readiness worker starts at failure.
func TestWorkerThresholds(t *testing.T) {
	results := []Result{Success, Failure, Failure, Success, Failure, Failure, Failure, Success, Warning}
	i := 0
	var flips []string
	w := &Worker{Kind: Readiness, Probe: &corev1.Probe{FailureThreshold: 3, SuccessThreshold: 2}, Clock: clocktesting.NewFakeClock(time.Now()),
		Run: func(context.Context) (Result, string) { i++; return results[i-1], "" },
		Report: func(r Result, _ string, current Result, changed bool) {
			if changed {
				flips = append(flips, strconv.Itoa(i)+":"+current.String())
			}
		}}
	w.result = Initial(Readiness)
	for range results {
		w.Step(context.Background())
	}
	// 1 success (needs 2), 2 failures (already failure), success+failure reset,
	// 3 failures at step 7 (already failure: no flip), a success and a warning at steps 8-9: flip.
	if strings.Join(flips, " ") != "9:success" {
		t.Errorf("flips %v", flips)
	}
	if Initial(Liveness) != Success || Initial(Startup) != Unknown {
		t.Errorf("initial results: liveness %v, startup %v", Initial(Liveness), Initial(Startup))
	}
}

// TestWorkerTiming: with a fake clock, nothing runs before initialDelaySeconds, then one
// probe per period; a closed gate (startup not yet succeeded) holds the probe back.
func TestWorkerTiming(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	runs := make(chan struct{}, 10)
	var gate atomic.Bool
	w := &Worker{Kind: Liveness, Probe: &corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 1}, Clock: clk,
		Gate: gate.Load,
		Run:  func(context.Context) (Result, string) { runs <- struct{}{}; return Success, "" }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Loop(ctx)
	waitTimer := func() {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
	}
	waitTimer()
	clk.Step(4 * time.Second)
	waitTimer()
	select {
	case <-runs:
		t.Fatal("probed before initialDelaySeconds")
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(2200 * time.Millisecond) // past the delay, the jitter (< 1 period) and the grid: gate closed
	waitTimer()
	select {
	case <-runs:
		t.Fatal("probed while the gate was closed")
	case <-time.After(50 * time.Millisecond):
	}
	gate.Store(true)
	clk.Step(time.Second)
	select {
	case <-runs:
	case <-time.After(2 * time.Second):
		t.Fatal("no probe one period after the gate opened")
	}
}

// runPeriods runs w's loop for n one-second periods of clk (w's), or until it stops.
func runPeriods(w *Worker, clk *clocktesting.FakeClock, n int) {
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { w.Loop(ctx); close(done) }()
	for range n {
		for !clk.HasWaiters() {
			select {
			case <-done:
			case <-time.After(time.Millisecond):
				continue
			}
			break
		}
		clk.Step(time.Second)
	}
	cancel()
	<-done
}

// TestWorkerHoldsAfterKill: a liveness or startup worker that flips to failure stops
// probing (the kubelet's onHold: the container is being killed; its next instance gets a
// new worker), so "Liveness probe failed" is not repeated through the kill's grace period.
// A readiness worker goes on.
func TestWorkerHoldsAfterKill(t *testing.T) {
	for _, kind := range []Kind{Liveness, Startup, Readiness} {
		clk := clocktesting.NewFakeClock(time.Now())
		runs := 0
		w := &Worker{Kind: kind, Probe: &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2}, Clock: clk,
			Run: func(context.Context) (Result, string) { runs++; return Failure, "" }}
		runPeriods(w, clk, 6)
		want := 2
		if kind == Readiness {
			want = 5
		}
		if runs < want || (kind != Readiness && runs != want) {
			t.Errorf("%s worker probed %d times in 6 periods failing, want %d", kind, runs, want)
		}
	}
}

// TestStartupWorkerStopsOnceStarted: a startup worker whose result flips to success stops
// probing, as the kubelet's (onHold once a startup result is set; a started container's
// startup probe is not run again), so a later failure of the startup command cannot kill
// a container that has started.
func TestStartupWorkerStopsOnceStarted(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	results := []Result{Failure, Success, Failure, Failure, Failure, Failure}
	runs := 0
	var flips []string
	w := &Worker{Kind: Startup, Probe: &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 3}, Clock: clk,
		Run: func(context.Context) (Result, string) { runs++; return results[min(runs, len(results))-1], "" },
		Report: func(_ Result, _ string, current Result, changed bool) {
			if changed {
				flips = append(flips, current.String())
			}
		}}
	runPeriods(w, clk, 8)
	if runs != 2 || strings.Join(flips, " ") != "success" {
		t.Errorf("startup worker probed %d times and flipped %v, want 2 probes and one flip to success", runs, flips)
	}
}

func TestExecHandler(t *testing.T) {
	run := func(code int, out string, err error, wait bool) Execer {
		return func(ctx context.Context, cmd []string, w io.Writer) (int, error) {
			w.Write([]byte(out))
			if wait {
				<-ctx.Done()
			}
			return code, err
		}
	}
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}, TimeoutSeconds: 1}
	c := &corev1.Container{Name: "app"}
	cases := []struct {
		name   string
		exec   Execer
		result Result
		output string
	}{
		{"exit 0", run(0, "ok", nil, false), Success, "ok"},
		{"exit 1 reports the output", run(1, "cat: can't open '/tmp/healthy'", nil, false), Failure, "cat: can't open '/tmp/healthy'"},
		{"timeout", run(0, "", nil, true), Failure, `command "cat /tmp/healthy" timed out`},
		{"cannot run", run(0, "", errors.New("no task"), false), Unknown, "no task"},
		{"output is cut", run(1, strings.Repeat("x", maxBody+100), nil, false), Failure, strings.Repeat("x", maxBody)},
		{"no runtime", nil, Unknown, "exec probes need a container runtime"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, out := Run(context.Background(), p, c, "127.0.0.1", tc.exec)
			if r != tc.result || out != tc.output {
				t.Errorf("Run = %v, %.60q; want %v, %.60q", r, out, tc.result, tc.output)
			}
		})
	}
}

// TestWorkerGrid: probes fall on probeGrid boundaries, one period apart, and a probe
// longer than its period skips the tick it overran.
func TestWorkerGrid(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	times := make(chan time.Time, 10)
	var probes atomic.Int32
	w := &Worker{Kind: Readiness, Probe: &corev1.Probe{PeriodSeconds: 1}, Clock: clk,
		Run: func(context.Context) (Result, string) {
			times <- clk.Now()
			if probes.Add(1) == 2 {
				clk.Step(1500 * time.Millisecond) // the second probe runs 1.5 s
			}
			return Success, ""
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Loop(ctx)
	// The clock moves in 10 ms steps, each once the worker waits again: a probe's time
	// is the step its timer fired at.
	var got []time.Time
	for step := 0; len(got) < 3 && step < 500; step++ {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(10 * time.Millisecond)
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		select {
		case at := <-times:
			got = append(got, at)
		default:
		}
	}
	if len(got) < 3 {
		t.Fatalf("%d probes in 5 s", len(got))
	}
	for i, at := range got {
		if at.UnixNano()%int64(probeGrid) != 0 {
			t.Errorf("probe %d at %v: not on the %v grid", i, at.Sub(time.Unix(1000, 0)), probeGrid)
		}
	}
	if d := got[1].Sub(got[0]); d != time.Second {
		t.Errorf("probes %v apart, want a period", d)
	}
	// The second probe ran 1.5 s: the tick 1 s after it was missed, the next is 2 s after it.
	if d := got[2].Sub(got[1]); d != 2*time.Second {
		t.Errorf("the probe after a slow one came %v after it, want 2s", d)
	}
}

// TestResolveContainerPort: a port by name, or a number written as a string; an unknown
// name fails with the kubelet's words.
func TestResolveContainerPort(t *testing.T) {
	c := &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}
	for _, tc := range []struct {
		port intstr.IntOrString
		want int
		err  string
	}{
		{intstr.FromInt32(8080), 8080, ""},
		{intstr.FromString("http"), 80, ""},
		{intstr.FromString("8081"), 8081, ""},
		{intstr.FromString("metrics"), 0, `strconv.Atoi: parsing "metrics": invalid syntax`},
		{intstr.FromInt32(70000), 0, "invalid port number: 70000"},
	} {
		port, err := ResolveContainerPort(tc.port, c)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("port %s: error %v, want %q", tc.port.String(), err, tc.err)
			}
			continue
		}
		if err != nil || port != tc.want {
			t.Errorf("port %s: %d, %v; want %d", tc.port.String(), port, err, tc.want)
		}
	}
}
