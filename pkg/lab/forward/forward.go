// Package forward publishes a lab address on the host's loopback, as kind publishes its
// API server and extraPortMappings: a listener on 127.0.0.1 in the host namespace whose
// connections are dialed from inside a lab namespace. The host never gets a route or a
// link into the lab; only this process, between two sockets, carries bytes across.
package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/network"
)

// DialInNetNS opens a connection to addr from inside the network namespace at nsPath. The
// socket belongs to that namespace for good, so it may be used from any goroutine.
func DialInNetNS(ctx context.Context, nsPath, proto, addr string) (net.Conn, error) {
	var conn net.Conn
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	err := network.InNetNS(nsPath, func() (err error) {
		conn, err = dialer.DialContext(ctx, proto, addr)
		return err
	})
	return conn, err
}

// CheckLoopback refuses a listen address that is not on the host's loopback: a published
// lab port must never be reachable from another machine.
func CheckLoopback(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q: a lab is published on the host's loopback only (127.0.0.0/8)", listen)
	}
	return nil
}

// Serve accepts connections on ln until ctx ends and copies each, both ways, to a
// connection to target dialed from inside the namespace at nsPath. A connection whose
// target does not answer is closed; the listener stays.
func Serve(ctx context.Context, ln net.Listener, nsPath, target string, logf func(format string, args ...any)) error {
	return ServeDialing(ctx, ln, func(ctx context.Context) (net.Conn, error) {
		up, err := DialInNetNS(ctx, nsPath, "tcp", target)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", target, err)
		}
		return up, nil
	}, logf)
}

// ServeDialing is Serve with the upstream connection of each accepted one made by dial
// (a balancer picks its backend there).
func ServeDialing(ctx context.Context, ln net.Listener, dial func(context.Context) (net.Conn, error), logf func(format string, args ...any)) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			up, err := dial(ctx)
			if err != nil {
				logf("connection from %s: %v", conn.RemoteAddr(), err)
				return
			}
			defer up.Close()
			pipe(ctx, conn, up)
		}()
	}
}

// pipe copies a to b and b to a until both directions end or ctx does. A direction that
// ends half-closes its destination, so a client that shuts down writing still gets the
// answer.
func pipe(ctx context.Context, a, b net.Conn) {
	stop := context.AfterFunc(ctx, func() { a.Close(); b.Close() })
	defer stop()
	var wg sync.WaitGroup
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
}
