package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReverseName(t *testing.T) {
	for ip, want := range map[string]string{
		"10.96.0.10": "10.0.96.10.in-addr.arpa",
		"fd00::1":    "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa",
	} {
		if got := reverseName(net.ParseIP(ip)); got != want {
			t.Errorf("reverseName(%s) = %s, want %s", ip, got, want)
		}
	}
}

func TestFirstNameserver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte("search a.example\nnameserver 10.96.0.10\nnameserver 10.96.0.11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := firstNameserver(path); err != nil || got != "10.96.0.10" {
		t.Errorf("firstNameserver = %q, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("search a.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := firstNameserver(path); err == nil || !strings.Contains(err.Error(), "names no nameserver") {
		t.Errorf("no nameserver: err = %v", err)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"-type=srv", "x"}, {"a", "b", "c"}} {
		if err := run(args, nil); err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("run(%q) = %v, want the usage", args, err)
		}
	}
}
