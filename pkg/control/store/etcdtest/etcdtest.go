// Package etcdtest runs a throwaway etcd (Debian's etcd-server binary) on loopback for tests
// and benchmarks: free loopback ports, a data dir of the caller's, killed on Stop.
package etcdtest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/testenv"
)

// readyTimeout bounds the wait for a new etcd to elect itself and serve.
const readyTimeout = 30 * time.Second

// Server is one running single-member etcd.
type Server struct {
	// Endpoints are the client URLs, for store.OpenEtcd.
	Endpoints []string
	// HostPorts are the endpoints without scheme, as --store=etcd://HOST:PORT takes them.
	HostPorts []string
	cmd       *exec.Cmd
	exited    chan error
	logPath   string
}

// Start runs etcd with its data and log in dir and waits until it serves.
func Start(dir string) (*Server, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd binary not found (Debian package etcd-server): %w", err)
	}
	clientPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	hostPort := "127.0.0.1:" + clientPort
	clientURL, peerURL := "http://"+hostPort, "http://127.0.0.1:"+peerPort
	s := &Server{Endpoints: []string{clientURL}, HostPorts: []string{hostPort}, exited: make(chan error, 1), logPath: filepath.Join(dir, "etcd.log")}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	s.cmd = exec.Command(bin,
		"--name", "etcdtest", "--data-dir", filepath.Join(dir, "etcd-data"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "etcdtest="+peerURL, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	if err := s.waitReady(clientURL); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w; etcd log:\n%s", err, s.LogTail(4096))
	}
	return s, nil
}

// ForTest starts etcd for t in a temporary dir, skipping t when the binary is missing, and
// stops it when t ends.
func ForTest(t testing.TB) *Server {
	t.Helper()
	testenv.RequireTools(t, "etcd")
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("etcd log (tail):\n%s", s.LogTail(4096))
		}
	})
	return s
}

func (s *Server) waitReady(clientURL string) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := client.Get(clientURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/health answered %s", resp.Status)
		}
		select {
		case werr := <-s.exited:
			s.exited <- werr
			return fmt.Errorf("etcd exited before serving: %v", werr)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd at %s not ready after %s: %w", clientURL, readyTimeout, err)
		}
	}
}

// Stop kills etcd and waits until it has exited.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	err := <-s.exited
	s.exited <- err
}

// LogTail returns the last n bytes of etcd's log.
func (s *Server) LogTail(n int) string {
	logs, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	return string(logs[max(0, len(logs)-n):])
}

func freeLoopbackPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return "", errors.New("find a free loopback port: listener has no TCP address")
	}
	return strconv.Itoa(addr.Port), nil
}
