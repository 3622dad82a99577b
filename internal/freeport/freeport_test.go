package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestLoopbackPortsDifferAndAreFree(t *testing.T) {
	ports, err := Loopback(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: %d repeated or invalid", ports, p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free after Loopback returned: %v", p, err)
		}
		l.Close()
	}
}
