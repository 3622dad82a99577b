package forward

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/network/nettest"
)

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", "127.0.0.2:1", "[::1]:80"} {
		if err := CheckLoopback(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:8080", "10.0.0.1:80", ":80", "localhost:80", "127.0.0.1"} {
		if err := CheckLoopback(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestServe: a server listening on 127.0.0.1 inside a fresh namespace, which the host's
// own 127.0.0.1 does not reach, answers through the forwarder's host listener.
func TestServe(t *testing.T) {
	nsPath := nettest.NetNS(t, "fwd-test")[0]
	var inner net.Listener
	nettest.In(t, nsPath, func() (err error) {
		inner, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	defer inner.Close()
	go func() {
		for {
			c, err := inner.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				_, _ = c.Write([]byte("inside got " + string(b)))
			}()
		}
	}()
	target := inner.Addr().String()

	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, host, nsPath, target, t.Logf) }()
	for i := range 3 {
		c, err := net.Dial("tcp", host.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("hello"))
		_ = c.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != "inside got hello" {
			t.Fatalf("connection %d: got %q, %v", i, got, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", host.Addr().String()); err == nil {
		t.Fatal("the host listener outlived Serve")
	} else if !strings.Contains(err.Error(), "refused") {
		t.Logf("dial after stop: %v", err)
	}
}
