package apilb

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// nameServer answers every connection with its name, on a loopback port of its own.
type nameServer struct {
	name string
	ln   net.Listener
}

func startNameServer(t *testing.T, name, addr string) *nameServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &nameServer{name: name, ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, name)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func ask(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	b, _ := io.ReadAll(c)
	return string(b)
}

func waitHealthy(t *testing.T, b *Balancer, want []string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(b.Healthy(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("healthy backends %v, want %v", b.Healthy(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBalancerRotatesAndDropsDeadBackends(t *testing.T) {
	servers := []*nameServer{startNameServer(t, "a", "127.0.0.1:0"), startNameServer(t, "b", "127.0.0.1:0"), startNameServer(t, "c", "127.0.0.1:0")}
	var backends []string
	for _, s := range servers {
		backends = append(backends, s.ln.Addr().String())
	}
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &Balancer{Backends: backends, Interval: 200 * time.Millisecond, Logf: t.Logf}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.Serve(ctx, front) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	waitHealthy(t, b, backends)

	got := map[string]int{}
	for range 6 {
		got[ask(t, front.Addr().String())]++
	}
	if got["a"] != 2 || got["b"] != 2 || got["c"] != 2 {
		t.Fatalf("6 connections went %v, want 2 to each backend", got)
	}

	// b dies: it leaves the rotation within two periods and no connection reaches for it.
	servers[1].ln.Close()
	waitHealthy(t, b, []string{backends[0], backends[2]})
	got = map[string]int{}
	for range 4 {
		got[ask(t, front.Addr().String())]++
	}
	if got["a"] != 2 || got["c"] != 2 {
		t.Fatalf("with b down, 4 connections went %v, want 2 to a and c each", got)
	}

	// b comes back on its address: it takes connections again.
	startNameServer(t, "b", backends[1])
	waitHealthy(t, b, backends)
	got = map[string]int{}
	for range 3 {
		got[ask(t, front.Addr().String())]++
	}
	if got["b"] != 1 {
		t.Fatalf("with b back, 3 connections went %v, want one to b", got)
	}
}

func TestBalancerWithNoHealthyBackendClosesConnections(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &Balancer{Backends: []string{addr}, Interval: 100 * time.Millisecond}
	go b.Serve(ctx, front)
	if got := ask(t, front.Addr().String()); got != "" {
		t.Fatalf("got %q from a balancer without a live backend", got)
	}
	if h := b.Healthy(); len(h) != 0 {
		t.Fatalf("healthy %v, want none", h)
	}
}

// When every backend fails its check but still accepts connections (API servers that lost
// their store), connections still reach them, to be told why.
func TestBalancerWithEveryCheckFailingStillConnects(t *testing.T) {
	s := startNameServer(t, "a", "127.0.0.1:0")
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &Balancer{Backends: []string{s.ln.Addr().String()}, Interval: 100 * time.Millisecond,
		Check: func(context.Context, string) error { return fmt.Errorf("not ready") }}
	go b.Serve(ctx, front)
	if got := ask(t, front.Addr().String()); got != "a" {
		t.Fatalf("got %q, want the unready backend's answer", got)
	}
	if h := b.Healthy(); len(h) != 0 {
		t.Fatalf("healthy %v, want none", h)
	}
}

func TestReadyzCheck(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if !ready.Load() {
			http.Error(w, "readyz check failed", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	check := ReadyzCheck(srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs)
	backend := srv.Listener.Addr().String()
	if err := check(context.Background(), backend); err == nil {
		t.Fatal("a server answering 500 on /readyz passed the check")
	}
	ready.Store(true)
	if err := check(context.Background(), backend); err != nil {
		t.Fatalf("a ready server failed the check: %v", err)
	}
	// Without the server's CA the check fails: it verifies what it talks to.
	if err := ReadyzCheck(nil)(context.Background(), backend); err == nil {
		t.Fatal("the check passed without the server's CA")
	}
}
