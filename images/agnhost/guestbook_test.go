package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestGuestbookReplication: the Kubectl Guestbook test's exchange over loopback. A
// replica registers to the primary, so the primary pushes it each /set; the frontend
// sends set to the primary and get to the replica, and answers what they answer.
// The primary and the replica share one port on two loopback addresses, as pods on
// backendPort do on their own IPs (the replica registers with 127.0.0.1, the address
// it reaches 127.0.0.2 from).
func TestGuestbookReplication(t *testing.T) {
	replicaL, primaryL := listenPair(t)
	_, port, _ := net.SplitHostPort(primaryL.Addr().String())

	primary := newGuestbook(port)
	primary.store["messages"] = "before"
	serveOn(t, primaryL, primary)
	replica := newGuestbook(port)
	serveOn(t, replicaL, replica)
	if err := replica.register("127.0.0.2", 10*time.Second); err != nil {
		t.Fatal(err)
	}

	frontend := newGuestbook(port)
	frontend.primary, frontend.replica = "127.0.0.2", "127.0.0.1"
	frontendL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, frontendL, frontend)
	guestbook := func(cmd, value string) (string, int) {
		t.Helper()
		q := url.Values{"cmd": {cmd}, "key": {"messages"}, "value": {value}}
		resp, err := http.Get("http://" + frontendL.Addr().String() + "/guestbook?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body), resp.StatusCode
	}

	if got, _ := guestbook("get", ""); got != `{"data":"before"}` {
		t.Errorf("get from the replica after registering: %s", got)
	}
	if got, _ := guestbook("set", "TestEntry"); got != `{"message":"Updated"}` {
		t.Errorf("set: %s", got)
	}
	if got, _ := guestbook("get", ""); got != `{"data":"TestEntry"}` {
		t.Errorf("get from the replica after set: %s", got)
	}
	if got, _ := guestbook("set", "a & b=c"); got != `{"message":"Updated"}` {
		t.Errorf("set of a value to escape: %s", got)
	}
	if got, _ := guestbook("get", ""); got != `{"data":"a \u0026 b=c"}` {
		t.Errorf("get of a value to escape: %s", got)
	}
	if _, status := guestbook("delete", ""); status != http.StatusBadRequest {
		t.Errorf("an unsupported cmd: status %d", status)
	}

	// A store without the key answers "", as the test's first get expects.
	resp, err := http.Get("http://" + replicaL.Addr().String() + "/get?key=other")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); string(body) != `{"data":""}` {
		t.Errorf("get of a missing key: %s", body)
	}
}

// listenPair listens on one free port on 127.0.0.1 and 127.0.0.2.
func listenPair(t *testing.T) (net.Listener, net.Listener) {
	t.Helper()
	for range 20 {
		first, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(first.Addr().String())
		second, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", port))
		if err == nil {
			t.Cleanup(func() { first.Close(); second.Close() })
			return first, second
		}
		first.Close()
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return nil, nil
}

func serveOn(t *testing.T, l net.Listener, g *guestbook) {
	server := &http.Server{Handler: g.routes()}
	go server.Serve(l)
	t.Cleanup(func() { server.Close() })
}
