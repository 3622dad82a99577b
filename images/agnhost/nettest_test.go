package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/rest"
)

// TestNettestCountsPreStopWrites: what the PreStop conformance test does to the server
// pod: its hook posts {"Source": "prestop"} to /write (busybox wget --post-data), then the
// test reads /read until Received["prestop"] is set. /read has upstream's fields, and
// /status says fail once the peers cannot be found (here: no API server).
func TestNettestCountsPreStopWrites(t *testing.T) {
	bin := buildAgnhost(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	server := exec.Command(bin, "nettest", "--port", port)
	server.Env = []string{"PATH=" + os.Getenv("PATH")} // no KUBERNETES_SERVICE_HOST: not in a cluster
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer server.Process.Kill()
	base := "http://127.0.0.1:" + port
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
		}
		return string(body)
	}
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if _, err := http.Get(base + "/status"); err == nil {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("nettest did not serve within 20s")
		}
	}

	resp, err := http.Post(base+"/write", "application/x-www-form-urlencoded", strings.NewReader(`{"Source": "prestop"}`))
	if err != nil {
		t.Fatal(err)
	}
	var written struct{ Hostname string }
	err = json.NewDecoder(resp.Body).Decode(&written)
	resp.Body.Close()
	hostname, _ := os.Hostname()
	if err != nil || resp.StatusCode != http.StatusOK || written.Hostname != hostname {
		t.Errorf("/write answered %s %+v (%v), want 200 with Hostname %q", resp.Status, written, err, hostname)
	}
	resp, err = http.Post(base+"/write", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	var state map[string]json.RawMessage
	if err := json.Unmarshal([]byte(get("/read")), &state); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(state)); !slices.Equal(keys, []string{"Errors", "Hostname", "Log", "Received", "Sent", "StillContactingPeers"}) {
		t.Errorf("/read has fields %q, want upstream's", keys)
	}
	var received map[string]int
	var errors []string
	json.Unmarshal(state["Received"], &received)
	json.Unmarshal(state["Errors"], &errors)
	if !maps.Equal(received, map[string]int{"prestop": 1}) {
		t.Errorf("Received %v, want prestop: 1", received)
	}
	if len(errors) != 1 || !strings.Contains(errors[0], "Got request with no source") {
		t.Errorf("Errors %q, want the write without a source", errors)
	}

	var status string
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(50 * time.Millisecond) {
		if status = get("/status"); status == "fail" {
			break
		}
	}
	if status != "fail" {
		t.Errorf("/status outside a cluster is %q, want fail", status)
	}
}

// TestNettestContactsPeers: two nettest servers find each other among the ready
// endpoints of their service's EndpointSlices, post to each other's /write and pass;
// a not-ready endpoint is never contacted; with fewer peers than wanted, /status says
// running while looking, then fail.
func TestNettestContactsPeers(t *testing.T) {
	serve := func(s *nettestState) *httptest.Server {
		server := httptest.NewServer(s.mux())
		t.Cleanup(server.Close)
		return server
	}
	a, b := newNettestState("a", 2), newNettestState("b", 2)
	serverA, serverB := serve(a), serve(b)
	var notReadyHits atomic.Int32
	notReady := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { notReadyHits.Add(1) }))
	defer notReady.Close()

	slice := func(server string, ready bool) discoveryv1.EndpointSlice {
		u, _ := url.Parse(server)
		port, _ := strconv.Atoi(u.Port())
		p := int32(port)
		return discoveryv1.EndpointSlice{
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{u.Hostname()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:     []discoveryv1.EndpointPort{{Port: &p}},
		}
	}
	var lists atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/version":
			w.Write([]byte(`{"major": "1", "minor": "36", "gitVersion": "v1.36.3"}`))
		case "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices":
			if got := r.URL.Query().Get("labelSelector"); got != "kubernetes.io/service-name=nettest" {
				http.Error(w, "selector "+got, http.StatusBadRequest)
				return
			}
			items := []discoveryv1.EndpointSlice{slice(serverA.URL, true), slice(notReady.URL, false)}
			if lists.Add(1) > 2 { // the second peer's endpoint shows up late
				items = append(items, slice(serverB.URL, true))
			}
			json.NewEncoder(w).Encode(discoveryv1.EndpointSliceList{Items: items})
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	peers, err := newPeerAPI(&rest.Config{Host: api.URL}, "ns", "nettest")
	if err != nil {
		t.Fatal(err)
	}
	status := func(s *nettestState) string {
		rec := httptest.NewRecorder()
		s.serveStatus(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
		return rec.Body.String()
	}
	if got := status(a); got != "running" {
		t.Errorf("status before contacting peers %q, want running", got)
	}
	timing := peerTiming{interval: 10 * time.Millisecond, timeout: 10 * time.Second, rounds: 2}
	var wg sync.WaitGroup
	for _, s := range []*nettestState{a, b} {
		wg.Go(func() { s.contactPeers(context.Background(), peers, timing) })
	}
	wg.Wait()
	for _, s := range []*nettestState{a, b} {
		if got := status(s); got != "pass" {
			t.Errorf("%s: status %q, want pass; log %q", s.Hostname, got, s.Log)
		}
		if want := map[string]int{"a": 2, "b": 2}; !maps.Equal(s.Sent, want) || !maps.Equal(s.Received, want) {
			t.Errorf("%s: sent %v, received %v; want %v each", s.Hostname, s.Sent, s.Received, want)
		}
	}
	if n := notReadyHits.Load(); n != 0 {
		t.Errorf("the not-ready endpoint was contacted %d times", n)
	}

	lonely := newNettestState("c", 3)
	lonely.contactPeers(context.Background(), peers, peerTiming{interval: 10 * time.Millisecond, timeout: 100 * time.Millisecond, rounds: 1})
	if got := status(lonely); got != "fail" {
		t.Errorf("status with 2 of 3 peers %q, want fail", got)
	}
}
