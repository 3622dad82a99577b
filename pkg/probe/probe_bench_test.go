package probe

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/internal/cputime"
)

// The benchmarks measure what one probe costs the prober's process in CPU time (user and
// system, getrusage), as minilet pays it: the probed servers run in a child process so
// their side of each connection is not counted. The baseline in the same run is a bare TCP
// connect and close, the least any probe does.
//
//	go test -run XXX -bench Probe -benchtime 3000x ./pkg/probe/

const serverEnv = "MINIK8S_PROBE_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		serveProbed()
		return
	}
	os.Exit(m.Run())
}

// serveProbed is the child: an HTTP server answering 200 on /healthz and a gRPC health
// server, their addresses on stdout; it ends when its stdin closes.
func serveProbed() {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(hl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(gl)
	fmt.Println(hl.Addr(), gl.Addr())
	bufio.NewReader(os.Stdin).ReadString('\n')
}

var probed struct {
	once       sync.Once
	http, grpc string
	stdin      io.WriteCloser
	err        error
}

// probedServers starts the child once for all benchmarks; it goes when the test binary does.
func probedServers(b *testing.B) (httpAddr, grpcAddr string) {
	probed.once.Do(func() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), serverEnv+"=1")
		// The pipe to its stdin stays open (referenced) until this process exits.
		if probed.stdin, probed.err = cmd.StdinPipe(); probed.err != nil {
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			probed.err = err
			return
		}
		if probed.err = cmd.Start(); probed.err != nil {
			return
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if f := strings.Fields(line); err == nil && len(f) == 2 {
			probed.http, probed.grpc = f[0], f[1]
		} else {
			probed.err = fmt.Errorf("probed servers: %q %v", line, err)
		}
	})
	if probed.err != nil {
		b.Fatal(probed.err)
	}
	return probed.http, probed.grpc
}

// benchCPU runs probe b.N times and reports its CPU time per probe in µs.
func benchCPU(b *testing.B, probe func(ctx context.Context) (Result, string)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, out := probe(ctx); r != Success { // warm up, and check it works
		b.Fatalf("probe = %v %q", r, out)
	}
	before := cputime.Self()
	b.ResetTimer()
	for range b.N {
		if r, out := probe(ctx); r != Success {
			b.Fatalf("probe = %v %q", r, out)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cputime.Self()-before).Microseconds())/float64(b.N), "cpu-µs/op")
}

func BenchmarkProbeBaselineConnect(b *testing.B) {
	addr, _ := probedServers(b)
	benchCPU(b, func(ctx context.Context) (Result, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return Failure, err.Error()
		}
		c.Close()
		return Success, ""
	})
}

// benchProbe runs a probe of the given handler through Run, as minilet's workers do.
func benchProbe(b *testing.B, h corev1.ProbeHandler) {
	p := &corev1.Probe{ProbeHandler: h, TimeoutSeconds: 1}
	c := &corev1.Container{Name: "c"}
	benchCPU(b, func(ctx context.Context) (Result, string) { return Run(ctx, p, c, "127.0.0.1", nil) })
}

func portOf(b *testing.B, addr string) int32 {
	_, port, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(port)
	if err != nil {
		b.Fatal(err)
	}
	return int32(n)
}

func BenchmarkProbeTCP(b *testing.B) {
	addr, _ := probedServers(b)
	benchProbe(b, corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(portOf(b, addr))}})
}

func BenchmarkProbeHTTP(b *testing.B) {
	addr, _ := probedServers(b)
	benchProbe(b, corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(portOf(b, addr))}})
}

func BenchmarkProbeGRPC(b *testing.B) {
	_, addr := probedServers(b)
	benchProbe(b, corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: portOf(b, addr)}})
}

// BenchmarkProbeWorkers runs, for each b.N, -probe.window of N pods' probes as minilet's
// workers run them (a liveness httpGet, a readiness gRPC and a readiness tcpSocket each,
// periodSeconds=1, on the probed servers of the child process) and reports the prober's
// CPU as a share of one core; the baseline in the same run is the same workers without
// the probe grid (each worker at its own random moment of the second).
//
//	go test -run XXX -bench ProbeWorkers -benchtime 1x ./pkg/probe/
func BenchmarkProbeWorkers(b *testing.B) {
	httpAddr, grpcAddr := probedServers(b)
	for _, grid := range []time.Duration{0, probeGrid} {
		b.Run(fmt.Sprintf("grid=%v", grid), func(b *testing.B) {
			defer func(g time.Duration) { probeGrid = g }(probeGrid)
			probeGrid = grid
			c := &corev1.Container{Name: "c"}
			handlers := []corev1.ProbeHandler{
				{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(portOf(b, httpAddr))}},
				{GRPC: &corev1.GRPCAction{Port: portOf(b, grpcAddr)}},
				{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(portOf(b, httpAddr))}},
			}
			const pods, window = 100, 10 * time.Second
			var share float64
			for range b.N {
				ctx, cancel := context.WithCancel(context.Background())
				var failures atomic.Int64
				for range pods {
					for _, h := range handlers {
						p := &corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, TimeoutSeconds: 1}
						w := &Worker{Kind: Readiness, Probe: p, Clock: clock.RealClock{},
							Run: func(ctx context.Context) (Result, string) { return Run(ctx, p, c, "127.0.0.1", nil) },
							Report: func(r Result, _ string, _ Result, _ bool) {
								if r != Success {
									failures.Add(1)
								}
							}}
						go w.Loop(ctx)
					}
				}
				time.Sleep(2 * time.Second) // every worker past its first probe
				before, start := cputime.Self(), time.Now()
				time.Sleep(window)
				share += float64(cputime.Self()-before) / float64(time.Since(start))
				cancel()
				if n := failures.Load(); n > 0 {
					b.Errorf("%d probes failed", n)
				}
			}
			b.ReportMetric(100*share/float64(b.N), "%core")
			b.ReportMetric(0, "ns/op")
		})
	}
}
