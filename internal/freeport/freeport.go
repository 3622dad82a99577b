// Package freeport finds TCP ports of 127.0.0.1 that nothing listens on, for the servers
// tests and benchmarks start (API servers, etcd members, forwarders). Another process may
// still take such a port before the server binds it; the callers' servers fail loudly then.
package freeport

import (
	"fmt"
	"net"
	"testing"
)

// Loopback is n distinct free loopback ports: each is held open until all are found, so
// they differ.
func Loopback(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// One is a free loopback port.
func One() (int, error) {
	ports, err := Loopback(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// For is a free loopback port, or fails t.
func For(t testing.TB) int {
	t.Helper()
	port, err := One()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
