package store

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startEtcd runs Debian's etcd for this test only: loopback ports, a temporary data dir,
// killed in cleanup. It returns the client endpoint.
func startEtcd(t *testing.T) []string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skipf("etcd binary not found (Debian package etcd-server): %v", err)
	}
	dir := t.TempDir()
	clientURL := "http://127.0.0.1:" + freeLoopbackPort(t)
	peerURL := "http://127.0.0.1:" + freeLoopbackPort(t)
	logPath := filepath.Join(dir, "etcd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin,
		"--name", "store-test", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "store-test="+peerURL, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			logs, _ := os.ReadFile(logPath)
			t.Logf("etcd log (last 4 KiB):\n%s", logs[max(0, len(logs)-4096):])
		}
	})

	endpoints := []string{clientURL}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := OpenEtcd(endpoints, "/ready")
		if err == nil {
			_ = s.Close()
			return endpoints
		}
		select {
		case werr := <-exited:
			exited <- werr
			t.Fatalf("etcd exited before serving: %v", werr)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd at %s not ready after 30s: %v", clientURL, err)
		}
	}
}

func TestEtcdConformance(t *testing.T) {
	endpoints := startEtcd(t)
	var storages atomic.Int64
	runConformance(t, func(t *testing.T) openFunc {
		// Each case gets its own key prefix on the shared etcd.
		prefix := fmt.Sprintf("/conformance-%d", storages.Add(1))
		return func(t *testing.T) Interface {
			s, err := OpenEtcd(endpoints, prefix)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
	})
}

func TestEtcdUnreachable(t *testing.T) {
	endpoint := "127.0.0.1:" + freeLoopbackPort(t) // nothing listens there any more
	start := time.Now()
	_, err := OpenEtcd([]string{endpoint}, "/x")
	if err == nil || !strings.Contains(err.Error(), endpoint) || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("open of an unreachable etcd: %v", err)
	}
	if time.Since(start) > 3*etcdTimeout {
		t.Fatalf("open of an unreachable etcd took %s", time.Since(start))
	}
}
