package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTimeout: -T 2 (which kills Debian's busybox wget) answers from a server on loopback,
// fails at once on a closed port, and gives up on a server that never answers after about
// 2 s.
func TestTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("hello " + r.Header.Get("User-Agent")))
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	if err := run([]string{"-q", "-T", "2", "-O", "-", srv.URL + "/"}, &out, &errOut); err != nil || out.String() != "hello Wget" {
		t.Errorf("wget -q -T 2 -O - %s: %q, %v (%s)", srv.URL, out.String(), err, errOut.String())
	}
	if err := run([]string{"-q", "-T", "2", "-O", "-", srv.URL + "/missing"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404: %v", err)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	start := time.Now()
	if err := run([]string{"-T", "2", "http://" + addr + "/"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "refused") || time.Since(start) > time.Second {
		t.Errorf("a closed port: %v after %v, want connection refused at once", err, time.Since(start))
	}

	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts (the kernel does), never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start = time.Now()
	err = run([]string{"-q", "-T", "2", "-O", "-", "http://" + silent.Addr().String() + "/"}, &out, &errOut)
	if took := time.Since(start); err == nil || took < 2*time.Second || took > 5*time.Second {
		t.Errorf("a silent server: %v after %v, want a timeout after about 2 s", err, took)
	}
}

// The option forms busybox's getopt takes and scripts use: short options run together
// (-qO-), a value joined to its option (-T2), long options with = and options after the URL.
func TestBusyboxOptionForms(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello " + r.Header.Get("User-Agent")))
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"-qO-", srv.URL + "/"},
		{"-qO", "-", "-T2", srv.URL + "/"},
		{"-q", "--output-document=-", "--timeout=2", srv.URL + "/"},
		{srv.URL + "/", "-q", "-O", "-"},
	} {
		var out, errOut bytes.Buffer
		if err := run(args, &out, &errOut); err != nil || out.String() != "hello Wget" {
			t.Errorf("wget %q: %q, %v (%s)", args, out.String(), err, errOut.String())
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, args := range [][]string{nil, {"-T", "-1", "http://x/"}, {"-T", "two", "http://x/"}, {"ftp://x/"}, {"--header", "nocolon", "http://x/"}, {"a", "b"}} {
		var out, errOut bytes.Buffer
		if err := run(args, &out, &errOut); err == nil {
			t.Errorf("wget %q: no error", args)
		}
	}
}
