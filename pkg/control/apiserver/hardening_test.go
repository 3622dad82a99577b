package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/allocator"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hardenedServer is a miniapi handler chain as ListenAndServeTLS builds it (without TLS)
// with the given limits and header timeout, on a watch-cached bolt store, with two token
// users: "attacker" and "probe", neither privileged.
// mutatingInFlight reads the server's count of writes holding a seat from /metrics.
var mutatingInFlight = regexp.MustCompile(`(?m)^apiserver_current_inflight_requests\{request_kind="mutating"\} (\d+)$`)

func hardenedServer(t *testing.T, limits filters.Limits, headerTimeout time.Duration) string {
	t.Helper()
	st := storetest.Cached(t)
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := allocator.NewRanges(st, allocator.DefaultServiceRange, allocator.DefaultNodePorts)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Store: st, Registry: reg, Ranges: ranges, Limits: limits,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err := s.Bootstrap(t.Context()); err != nil {
		t.Fatal(err)
	}
	tokens := authn.Tokens{"attacker": {Name: "attacker"}, "probe": {Name: "probe"}}
	ctx, cancel := context.WithCancel(context.Background())
	srv := s.newHTTPServer(ctx, authn.Authenticate(s.Handler(), tokens), headerTimeout)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { cancel(); _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

type client struct {
	base, token string
	http        *http.Client
}

func (c client) do(t *testing.T, method, path, contentType string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// memory samples the process's heap and resident memory until stop is closed.
type memory struct {
	peakHeap, peakRSS atomic.Uint64
	done              chan struct{}
}

func sampleMemory(stop <-chan struct{}) *memory {
	m := &memory{done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > m.peakHeap.Load() {
				m.peakHeap.Store(ms.HeapInuse)
			}
			if rss := residentBytes(); rss > m.peakRSS.Load() {
				m.peakRSS.Store(rss)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

func residentBytes() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Bad clients cannot take the server down: a JSON patch that would amplify itself to 64 MiB,
// bodies nested 100 000 deep, slow-loris clients trickling headers and bodies, and 2000
// concurrent long requests (1000 watches and 1000 writes whose bodies never finish) leave it
// answering another client, with bounded memory.
func TestBadClientsCannotTakeTheServerDown(t *testing.T) {
	const requestTimeout, headerTimeout = 3 * time.Second, 3 * time.Second
	base := hardenedServer(t, filters.Limits{RequestTimeout: requestTimeout, MaxRequestsInflight: 400, MaxMutatingRequestsInflight: 200}, headerTimeout)
	transport := &http.Transport{MaxIdleConnsPerHost: 100}
	t.Cleanup(transport.CloseIdleConnections)
	attacker := client{base: base, token: "attacker", http: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
	probe := client{base: base, token: "probe", http: &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	baseRSS := residentBytes()
	stop := make(chan struct{})
	mem := sampleMemory(stop)

	// The probe reads and writes all along; it must always be answered.
	probeStop := make(chan struct{})
	var probes, probeFailures atomic.Int32
	mostWrites := 0 // the probe's loop's alone until probeWG.Wait
	var probeWG sync.WaitGroup
	probeWG.Add(1)
	go func() {
		defer probeWG.Done()
		for i := 0; ; i++ {
			select {
			case <-probeStop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			code, _, body := probe.do(t, "GET", "/api/v1/namespaces/default/configmaps", "", nil)
			probes.Add(1)
			if code != http.StatusOK {
				probeFailures.Add(1)
				t.Errorf("probe LIST during the attacks: %d %s", code, body)
			}
			// The server's own count of writes holding a seat: what the client sees
			// lags it by however late a loaded machine reads its answers.
			if code, _, body := probe.do(t, "GET", "/metrics", "", nil); code == http.StatusOK {
				if m := mutatingInFlight.FindSubmatch(body); m != nil {
					n, _ := strconv.Atoi(string(m[1]))
					mostWrites = max(mostWrites, n)
				}
			}
		}
	}()

	// A pod with a 64 KiB annotation, and a patch doubling a copy of it ten times.
	big := strings.Repeat("x", 64<<10)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim", Annotations: map[string]string{"big": big}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	podJSON, _ := json.Marshal(pod)
	if code, _, body := attacker.do(t, "POST", "/api/v1/namespaces/default/pods", "application/json", podJSON); code != http.StatusCreated {
		t.Fatalf("create the pod: %d %s", code, body)
	}
	ops := []string{`{"op":"add","path":"/z","value":[]}`, `{"op":"copy","from":"/metadata/annotations/big","path":"/z/-"}`}
	for range 10 {
		ops = append(ops, `{"op":"copy","from":"/z","path":"/z/-"}`)
	}
	code, _, body := attacker.do(t, "PATCH", "/api/v1/namespaces/default/pods/victim", "application/json-patch+json", []byte("["+strings.Join(ops, ",")+"]"))
	// Refused by json-patch's copy limit with kube's 422 of a patch that does not apply.
	if code != http.StatusUnprocessableEntity {
		t.Errorf("a JSON patch amplifying to 64 MiB: %d %.300s, want 422", code, body)
	}
	many := make([]string, maxJSONPatchOperations+1)
	for i := range many {
		many[i] = `{"op":"test","path":"/kind","value":"Pod"}`
	}
	code, _, body = attacker.do(t, "PATCH", "/api/v1/namespaces/default/pods/victim", "application/json-patch+json", []byte("["+strings.Join(many, ",")+"]"))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "10000") {
		t.Errorf("a JSON patch of 10001 operations: %d %.300s, want 413", code, body)
	}

	// Bodies nested 100 000 deep, as JSON, YAML and a patch.
	const depth = 100000
	nested := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}"
	for _, tc := range []struct{ method, path, contentType string }{
		{"POST", "/api/v1/namespaces/default/configmaps", "application/json"},
		{"POST", "/api/v1/namespaces/default/configmaps", "application/yaml"},
		{"PATCH", "/api/v1/namespaces/default/pods/victim", "application/merge-patch+json"},
		{"PATCH", "/api/v1/namespaces/default/pods/victim", "application/strategic-merge-patch+json"},
	} {
		start := time.Now()
		code, _, body := attacker.do(t, tc.method, tc.path, tc.contentType, []byte(nested))
		if code != http.StatusBadRequest {
			t.Errorf("%s %s nested %d deep: %d %.300s, want 400", tc.method, tc.contentType, depth, code, body)
		}
		t.Logf("%s %s nested %d deep: %d in %s", tc.method, tc.contentType, depth, code, time.Since(start).Round(time.Millisecond))
	}

	// Slow-loris: 50 connections trickle their headers; the server drops each after the
	// header timeout.
	var loris sync.WaitGroup
	var lorisDropped atomic.Int32
	for range 50 {
		loris.Add(1)
		go func() {
			defer loris.Done()
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			start := time.Now()
			head := "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)
			for i := 0; i < len(head) && time.Since(start) < 10*headerTimeout; i++ {
				if _, err := conn.Write([]byte{head[i]}); err != nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadAll(conn); err == nil && time.Since(start) < 10*headerTimeout {
				lorisDropped.Add(1)
			}
		}()
	}

	// 2000 concurrent long requests: 1000 watches and 1000 writes whose bodies never end.
	var long sync.WaitGroup
	var watching, tooMany, timedOut, cut atomic.Int32
	watchCtx, endWatches := context.WithCancel(context.Background())
	defer endWatches()
	for range 1000 {
		long.Add(1)
		go func() {
			defer long.Done()
			req, _ := http.NewRequestWithContext(watchCtx, "GET", base+"/api/v1/namespaces/default/pods?watch=1", nil)
			req.Header.Set("Authorization", "Bearer attacker")
			resp, err := attacker.http.Do(req)
			if err != nil {
				t.Errorf("watch: %v", err)
				return
			}
			defer resp.Body.Close()
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err == nil && strings.Contains(line, `"ADDED"`) {
				watching.Add(1)
			}
			<-watchCtx.Done()
		}()
	}
	for i := range 1000 {
		long.Add(1)
		go func() {
			defer long.Done()
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "PUT /api/v1/namespaces/default/configmaps/slow-%d HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer attacker\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", i)
			// Answered at all, not how fast: a machine loaded 7-fold (this process
			// holds the 2000 clients too) answered some after more than 12 s.
			_ = conn.SetReadDeadline(time.Now().Add(20 * requestTimeout))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			switch {
			case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
				// Cut: on a loaded machine the body's read deadline (a second after the
				// request's) can pass before the 504 is written; the connection is
				// closed, which is what this attack must not keep.
				cut.Add(1)
				return
			case err != nil:
				t.Errorf("slow write: no answer: %v", err)
				return
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusTooManyRequests:
				if resp.Header.Get("Retry-After") == "" {
					t.Error("429 without Retry-After")
				}
				tooMany.Add(1)
			case http.StatusGatewayTimeout:
				timedOut.Add(1)
			default:
				t.Errorf("slow write: %d, want 429 or 504", resp.StatusCode)
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Minute) // served at all: under load 1000 took over 30 s
	for watching.Load() < 1000 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// The attacks are on: the probe keeps being answered (checked by its loop), and a write
	// of its own goes through once the attacker's writes have timed out.
	time.Sleep(requestTimeout + time.Second)
	cm, _ := json.Marshal(corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}})
	if code, _, body := probe.do(t, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm); code != http.StatusCreated {
		t.Errorf("probe write after the attacker's writes timed out: %d %s", code, body)
	}
	endWatches()
	long.Wait()
	loris.Wait()
	close(probeStop)
	probeWG.Wait()
	close(stop)
	<-mem.done

	heapGrowth := int64(mem.peakHeap.Load()) - int64(before.HeapInuse)
	rssGrowth := int64(mem.peakRSS.Load()) - int64(baseRSS)
	t.Logf("watches open at once: %d; slow writes: %d refused with 429, %d timed out with 504, %d cut; slow-loris connections dropped: %d/50; probe requests answered: %d (%d failed)",
		watching.Load(), tooMany.Load(), timedOut.Load(), cut.Load(), lorisDropped.Load(), probes.Load(), probeFailures.Load())
	t.Logf("memory: heap in use %.0f MiB at the start, peak %.0f MiB (+%.0f MiB); RSS %.0f MiB at the start, peak %.0f MiB (+%.0f MiB)",
		mib(before.HeapInuse), mib(mem.peakHeap.Load()), float64(heapGrowth)/(1<<20), mib(baseRSS), mib(mem.peakRSS.Load()), float64(rssGrowth)/(1<<20))
	if watching.Load() != 1000 {
		t.Errorf("%d of 1000 watches were served", watching.Load())
	}
	t.Logf("writes in flight at once (the server's apiserver_current_inflight_requests): at most %d", mostWrites)
	if tooMany.Load()+timedOut.Load()+cut.Load() != 1000 || tooMany.Load() == 0 || timedOut.Load() == 0 || mostWrites == 0 || mostWrites > 200 {
		t.Errorf("slow writes: %d refused, %d timed out, %d cut, up to %d in flight at once; want every one ended, some refused, some (at most 200, the mutating limit) timed out", tooMany.Load(), timedOut.Load(), cut.Load(), mostWrites)
	}
	if lorisDropped.Load() != 50 {
		t.Errorf("%d of 50 slow-loris connections were dropped by the server", lorisDropped.Load())
	}
	// Generous: the client side of 2000 connections runs in this process too. Under the
	// race detector (make unit) memory use grows 5-10x (Go's race detector docs).
	ceiling := int64(1 << 30)
	if raceDetector {
		ceiling *= 5
	}
	if rssGrowth > ceiling {
		t.Errorf("RSS grew by %.0f MiB, more than the %.0f MiB ceiling", float64(rssGrowth)/(1<<20), float64(ceiling)/(1<<20))
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// Clients trickling a request body a byte at a time are cut (their connection closed, as a
// read timeout of net/http's does) once filters.BodyTimeout has passed since their headers, not
// held for the whole request timeout (60 s here); a client whose body arrives in time is
// served.
func TestSlowBodiesAreCut(t *testing.T) {
	base := hardenedServer(t, filters.Limits{RequestTimeout: time.Minute, MaxRequestsInflight: 400, MaxMutatingRequestsInflight: 200}, headerTimeout)
	addr := strings.TrimPrefix(base, "http://")
	const clients = 50
	held := make(chan time.Duration, clients)
	for range clients {
		go func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				held <- 0
				return
			}
			defer conn.Close()
			start := time.Now()
			fmt.Fprintf(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer attacker\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
			answered := make(chan struct{})
			go func() { // one byte every 200 ms, until the server answers or 2*filters.BodyTimeout
				defer conn.Close()
				for range 10 * int(filters.BodyTimeout/time.Second) {
					select {
					case <-answered:
						return
					case <-time.After(200 * time.Millisecond):
					}
					if _, err := conn.Write([]byte{' '}); err != nil {
						return
					}
				}
			}()
			_ = conn.SetReadDeadline(time.Now().Add(2 * filters.BodyTimeout))
			answer, _ := io.ReadAll(conn) // the answer, then the close; or the deadline
			close(answered)
			if bytes.HasPrefix(answer, []byte("HTTP/1.1 2")) {
				t.Errorf("a cut slow body was served: %.200q", answer)
			}
			held <- time.Since(start)
		}()
	}
	cm, _ := json.Marshal(corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "in-time"}})
	probe := &client{http: &http.Client{}, base: base, token: "probe"}
	if code, _, body := probe.do(t, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm); code != http.StatusCreated {
		t.Errorf("a write whose body came at once: %d %s", code, body)
	}
	var longest time.Duration
	for range clients {
		longest = max(longest, <-held)
	}
	if longest < filters.BodyTimeout-time.Second || longest > filters.BodyTimeout+5*time.Second {
		t.Fatalf("slow-body connections held up to %s, want about filters.BodyTimeout (%s)", longest, filters.BodyTimeout)
	}
}
