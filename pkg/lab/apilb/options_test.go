package apilb

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	var o Options
	f := pflag.NewFlagSet("apilb", pflag.ContinueOnError)
	o.AddFlags(f)
	if err := f.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return &o
}

// apilb.env gives the backends comma-separated; minilab repeats --backend.
func TestOptionsBackendsCommaSeparatedOrRepeated(t *testing.T) {
	for _, args := range [][]string{
		{"--listen=127.0.0.1:6444", "--backend=10.0.0.1:6443,10.0.0.2:6443"},
		{"--listen=127.0.0.1:6444", "--backend", "10.0.0.1:6443", "--backend", "10.0.0.2:6443"},
	} {
		b, err := parse(t, args...).Balancer()
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if strings.Join(b.Backends, " ") != "10.0.0.1:6443 10.0.0.2:6443" {
			t.Errorf("%q: backends %q", args, b.Backends)
		}
		if b.Check != nil {
			t.Errorf("%q: without --ca-file the check must be the TCP one (nil)", args)
		}
	}
}

func TestOptionsRejected(t *testing.T) {
	badCA := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(badCA, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend=10.0.0.1:6443"}, "--listen"},
		{[]string{"--listen=127.0.0.1:6444"}, "--backend: name at least one"},
		{[]string{"--listen=127.0.0.1:6444", "--backend=SET-THE-CONTROL-PLANES"}, `--backend "SET-THE-CONTROL-PLANES"`},
		{[]string{"--listen=127.0.0.1:6444", "--backend=10.0.0.1:6443", "--ca-file=" + badCA}, "--ca-file"},
		{[]string{"--listen=127.0.0.1:6444", "--backend=10.0.0.1:6443", "--ca-file=/nonexistent/ca.crt"}, "--ca-file"},
	} {
		_, err := parse(t, c.args...).Balancer()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %s", c.args, err, c.want)
		}
	}
}

// Run listens, checks every backend once, says it is ready, then takes connections.
func TestRunReadyAfterFirstChecks(t *testing.T) {
	s := startNameServer(t, "a", "127.0.0.1:0")
	port := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}()
	o := parse(t, "--listen="+port, "--backend="+s.ln.Addr().String())
	b, err := o.Balancer()
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan []string, 1)
	b.Ready = func() { ready <- b.Healthy() }
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- o.Run(ctx, b) }()
	select {
	case healthy := <-ready:
		if len(healthy) != 1 {
			t.Fatalf("ready with healthy backends %v, want the one checked", healthy)
		}
	case err := <-served:
		t.Fatalf("Run ended before ready: %v", err)
	}
	if got := ask(t, port); got != "a" {
		t.Fatalf("got %q through the balancer, want a", got)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
