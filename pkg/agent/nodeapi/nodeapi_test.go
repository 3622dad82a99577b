package nodeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/pki"
)

type fakeLogs struct {
	path    string
	running bool
}

func (f fakeLogs) ContainerLog(ns, pod, container string, previous bool) (string, func() bool, error) {
	if pod != "web" || container != "c" {
		return "", nil, fmt.Errorf("container %q in pod %q: %w", container, pod, ErrNotFound)
	}
	return f.path, func() bool { return f.running }, nil
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServerRefusesAnonymousAndForeignClients serves the node API with real TLS: only a
// client certificate of the cluster CA gets in.
func TestServerRefusesAnonymousAndForeignClients(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.EnsureCA(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.EnsureCA(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, caFile, err := ca.WriteServing(filepath.Join(dir, "node"), "minilet", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "0.log")
	if err := os.WriteFile(logFile, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Serve(ctx, Config{Address: addr, CertFile: cert, KeyFile: key, ClientCAFile: caFile}, fakeLogs{path: logFile},
		slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	client := func(signer *pki.CA) *http.Client {
		cfg := &tls.Config{RootCAs: ca.CertPool()}
		if signer != nil {
			pair, err := signer.IssueClient("kube-apiserver-kubelet-client", nil)
			if err != nil {
				t.Fatal(err)
			}
			c, err := pair.TLSCertificate()
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	get := func(c *http.Client, path string) (int, string, error) {
		resp, err := c.Get("https://" + addr + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	if _, _, err := get(client(nil), "/healthz"); err == nil {
		t.Errorf("an anonymous client got in")
	}
	if _, _, err := get(client(other), "/healthz"); err == nil {
		t.Errorf("a client of another CA got in")
	}
	good := client(ca)
	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{"/healthz", "ok", 200},
		{"/containerLogs/default/web/c", "one\ntwo\nthree\n", 200},
		{"/containerLogs/default/web/c?tailLines=2", "two\nthree\n", 200},
		{"/containerLogs/default/web/c?tailLines=0", "", 200},
		{"/containerLogs/default/web/c?limitBytes=5", "one\nt", 200},
		{"/containerLogs/default/web/nope", `container "nope" in pod "web": not found`, 404},
		{"/containerLogs/default/web/c?timestamps=true", "timestamps is not supported", 400},
		{"/containerLogs/default/web/c?tailLines=-1", "must be a non-negative integer", 400},
	} {
		code, body, err := get(good, tc.path)
		if err != nil || code != tc.code || !strings.Contains(body, tc.body) || (tc.code == 200 && body != tc.body) {
			t.Errorf("GET %s = %d %q %v; want %d %q", tc.path, code, body, err, tc.code, tc.body)
		}
	}
}

// TestFollowStreamsUntilTheContainerStops appends to a log while following it.
func TestFollowStreamsUntilTheContainerStops(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(logFile, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stopped atomic.Bool
	logs := &fakeLogsFunc{path: logFile, running: func() bool { return !stopped.Load() }}
	srv := &http.Server{Handler: Handler(logs)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	resp, err := http.Get("http://" + l.Addr().String() + "/containerLogs/default/web/c?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 16)
	if n, _ := io.ReadAtLeast(resp.Body, buf, 2); string(buf[:n]) != "a\n" {
		t.Fatalf("first read %q", buf[:n])
	}
	f, _ := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, "b\n")
	f.Close()
	if n, _ := io.ReadAtLeast(resp.Body, buf, 2); string(buf[:n]) != "b\n" {
		t.Fatalf("followed read %q", buf[:n])
	}
	stopped.Store(true)
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stream end: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("following did not end when the container stopped")
	}
}

type fakeLogsFunc struct {
	path    string
	running func() bool
}

func (f *fakeLogsFunc) ContainerLog(string, string, string, bool) (string, func() bool, error) {
	return f.path, f.running, nil
}
