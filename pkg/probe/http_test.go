package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestHTTPHandlerEdges: what net/http's client (and so the kubelet's probe) does at the
// edges, checked against real servers: TLS without verification, the probe's own
// User-Agent and an empty Accept, a redirect loop, a chunked body, a timeout and a
// refused connection with net/http's messages.
func TestHTTPHandlerEdges(t *testing.T) {
	var agent string
	var accept []string
	loops := 0
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent, accept = r.UserAgent(), r.Header.Values("Accept")
		switch r.URL.Path {
		case "/loop":
			loops++
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/slow":
			time.Sleep(2 * time.Second)
		case "/chunked":
			w.Write([]byte("part one, "))
			w.(http.Flusher).Flush()
			w.Write([]byte("part two"))
		case "/query":
			w.Write([]byte(r.URL.RawQuery))
		}
	})
	tlsSrv := httptest.NewTLSServer(handler)
	defer tlsSrv.Close()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	get := func(raw string, timeout time.Duration, headers ...corev1.HTTPHeader) (Result, string) {
		t.Helper()
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return HTTP(ctx, u, headers)
	}

	if r, out := get(tlsSrv.URL+"/chunked", time.Second, corev1.HTTPHeader{Name: "User-Agent", Value: "mine"}, corev1.HTTPHeader{Name: "Accept", Value: ""}); r != Success || out != "part one, part two" {
		t.Errorf("https chunked = %v %q", r, out)
	}
	if agent != "mine" || len(accept) != 0 {
		t.Errorf("User-Agent %q, Accept %q; want the probe's own and none", agent, accept)
	}
	if r, out := get(srv.URL+"/query?a=1&b=2", time.Second); r != Success || out != "a=1&b=2" {
		t.Errorf("query = %v %q", r, out)
	}
	if r, out := get(srv.URL+"/loop", 5*time.Second); r != Failure || out != `Get "`+srv.URL+`/loop": stopped after 10 redirects` {
		t.Errorf("redirect loop = %v %q", r, out)
	}
	if loops != 10 {
		t.Errorf("a redirect loop made %d requests, want net/http's 10", loops)
	}
	if r, out := get(srv.URL+"/slow", 200*time.Millisecond); r != Failure ||
		out != `Get "`+srv.URL+`/slow": context deadline exceeded (Client.Timeout exceeded while awaiting headers)` {
		t.Errorf("timeout = %v %q", r, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	if r, out := get("http://"+closed+"/healthz", time.Second); r != Failure ||
		!strings.HasPrefix(out, `Get "http://`+closed+`/healthz": dial tcp `+closed+`: connect: connection refused`) {
		t.Errorf("refused = %v %q", r, out)
	}
}
