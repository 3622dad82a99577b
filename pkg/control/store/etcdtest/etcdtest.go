// Package etcdtest runs a throwaway etcd cluster on loopback for tests and benchmarks: one
// member or several, plain or with TLS between members and clients (certificates from a CA of
// its own), free loopback ports, data dirs of the caller's, members that can be killed and
// started again. The binary is the etcd `make etcd` builds (bin/etcd, etcd 3.6 from its
// published module), else the first etcd on PATH.
package etcdtest

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/pki"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// readyTimeout bounds the wait for a new member to join its cluster and serve.
const readyTimeout = 30 * time.Second

// Options shape a cluster.
type Options struct {
	Members int  // 0 is 1
	TLS     bool // TLS between members and to clients, client certificates required
}

// ClientTLSFiles are what a client of a TLS cluster needs, as kube-apiserver's --etcd-cafile,
// --etcd-certfile and --etcd-keyfile take them.
type ClientTLSFiles struct {
	CAFile, CertFile, KeyFile string
}

// Cluster is a running etcd cluster.
type Cluster struct {
	// Endpoints are the members' client URLs, for store.OpenEtcd.
	Endpoints []string
	// HostPorts are the endpoints without scheme, as --store=etcd://HOST:PORT takes them.
	HostPorts []string
	// TLS is nil for a plain cluster.
	TLS     *ClientTLSFiles
	Members []*Member
}

// Member is one etcd process of a cluster.
type Member struct {
	Name      string
	ClientURL string
	bin       string
	args      []string
	logPath   string
	health    *http.Client

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error
}

// Binary is the etcd tests run: $MINIK8S_BIN/etcd when `make` built it, else PATH's.
func Binary() (string, error) {
	if dir := os.Getenv("MINIK8S_BIN"); dir != "" {
		if bin := filepath.Join(dir, "etcd"); fileExists(bin) {
			return bin, nil
		}
	}
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("etcd binary not found (`make etcd` builds bin/etcd): %w", err)
	}
	return bin, nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// Start runs a one-member plain cluster with its data and log in dir.
func Start(dir string) (*Cluster, error) { return StartCluster(dir, Options{}) }

// StartCluster runs the members with their data, logs (and certificates) in dir and waits
// until every one serves.
func StartCluster(dir string, o Options) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	n := max(o.Members, 1)
	scheme := "http"
	c := &Cluster{}
	var memberFiles []ClientTLSFiles
	health := &http.Client{Timeout: time.Second}
	if o.TLS {
		scheme = "https"
		if c.TLS, memberFiles, err = writeCerts(filepath.Join(dir, "pki"), n); err != nil {
			return nil, err
		}
		cfg, err := c.ClientTLS()
		if err != nil {
			return nil, err
		}
		health.Transport = &http.Transport{TLSClientConfig: cfg}
	}
	var peers []string
	for i := range n {
		ports, err := freeport.Loopback(2)
		if err != nil {
			return nil, err
		}
		m := &Member{Name: fmt.Sprintf("etcd-%d", i+1), bin: bin, health: health}
		hostPort := "127.0.0.1:" + strconv.Itoa(ports[0])
		m.ClientURL = scheme + "://" + hostPort
		peerURL := scheme + "://127.0.0.1:" + strconv.Itoa(ports[1])
		m.logPath = filepath.Join(dir, m.Name+".log")
		m.args = []string{"--name", m.Name, "--data-dir", filepath.Join(dir, m.Name),
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster-state", "new", "--initial-cluster-token", "etcdtest",
			"--logger", "zap", "--log-outputs", "stderr"}
		if o.TLS {
			f := memberFiles[i]
			m.args = append(m.args, "--client-cert-auth", "--trusted-ca-file", f.CAFile, "--cert-file", f.CertFile, "--key-file", f.KeyFile,
				"--peer-client-cert-auth", "--peer-trusted-ca-file", f.CAFile, "--peer-cert-file", f.CertFile, "--peer-key-file", f.KeyFile)
		}
		peers = append(peers, m.Name+"="+peerURL)
		c.Members = append(c.Members, m)
		c.Endpoints, c.HostPorts = append(c.Endpoints, m.ClientURL), append(c.HostPorts, hostPort)
	}
	for _, m := range c.Members {
		m.args = append(m.args, "--initial-cluster", strings.Join(peers, ","))
		if err := m.launch(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for _, m := range c.Members { // members wait for each other's quorum: start all, then wait
		if err := m.waitReady(); err != nil {
			c.Stop()
			return nil, fmt.Errorf("%w; etcd log:\n%s", err, m.LogTail(4096))
		}
	}
	return c, nil
}

// writeCerts makes a CA, a peer certificate for each member (serving 127.0.0.1 and client
// of the others) and a client certificate.
func writeCerts(dir string, members int) (*ClientTLSFiles, []ClientTLSFiles, error) {
	ca, err := pki.EnsureCA(dir)
	if err != nil {
		return nil, nil, err
	}
	caFile := filepath.Join(dir, pki.CACertFile)
	write := func(name string, pair pki.KeyPair, err error) (ClientTLSFiles, error) {
		if err != nil {
			return ClientTLSFiles{}, err
		}
		f := ClientTLSFiles{CAFile: caFile, CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
		return f, pair.WriteFiles(f.CertFile, f.KeyFile)
	}
	var memberFiles []ClientTLSFiles
	for i := range members {
		pair, err := ca.IssuePeer(fmt.Sprintf("etcd-%d", i+1), []string{"127.0.0.1", "localhost"})
		f, err := write(fmt.Sprintf("etcd-%d", i+1), pair, err)
		if err != nil {
			return nil, nil, err
		}
		memberFiles = append(memberFiles, f)
	}
	pair, err := ca.IssueClient("etcd-client", nil)
	client, err := write("client", pair, err)
	if err != nil {
		return nil, nil, err
	}
	return &client, memberFiles, nil
}

// ClientTLS is the client configuration of a TLS cluster (nil for a plain one).
func (c *Cluster) ClientTLS() (*tls.Config, error) {
	if c.TLS == nil {
		return nil, nil
	}
	return transport.TLSInfo{TrustedCAFile: c.TLS.CAFile, CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile}.ClientConfig()
}

// ForTest starts a one-member plain cluster for t in a temporary dir (a missing binary fails
// under make test, else skips) and stops it when t ends.
func ForTest(t testing.TB) *Cluster { return ClusterForTest(t, Options{}) }

// ClusterForTest is ForTest for a cluster shaped by o.
func ClusterForTest(t testing.TB, o Options) *Cluster {
	t.Helper()
	testenv.Integration(t, "starts an etcd cluster")
	if _, err := Binary(); err != nil {
		testenv.Missing(t, "%v", err)
	}
	c, err := StartCluster(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for _, m := range c.Members {
				t.Logf("%s log (tail):\n%s", m.Name, m.LogTail(4096))
			}
		}
	})
	return c
}

// Stop kills every member.
func (c *Cluster) Stop() {
	for _, m := range c.Members {
		m.Stop()
	}
}

// LogTail returns the last n bytes of the first member's log.
func (c *Cluster) LogTail(n int) string { return c.Members[0].LogTail(n) }

func (m *Member) launch() error {
	logFile, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	return nil
}

// Restart starts a stopped member again on its data dir and waits until it serves (which
// needs a quorum of the cluster up).
func (m *Member) Restart() error {
	if err := m.launch(); err != nil {
		return err
	}
	return m.waitReady()
}

func (m *Member) waitReady() error {
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := m.health.Get(m.ClientURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/health answered %s", resp.Status)
		}
		select {
		case werr := <-exited:
			exited <- werr
			return fmt.Errorf("%s exited before serving: %v", m.Name, werr)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s at %s not ready after %s: %w", m.Name, m.ClientURL, readyTimeout, err)
		}
	}
}

// Stop kills the member (SIGKILL: no goodbye to the others) and waits until it has exited.
func (m *Member) Stop() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	err := <-exited
	exited <- err
}

// PID is the member's process id (0 before it started), for benchmarks that read its
// CPU time and RSS.
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// LogTail returns the last n bytes of the member's log.
func (m *Member) LogTail(n int) string {
	logs, err := os.ReadFile(m.logPath)
	if err != nil {
		return err.Error()
	}
	return string(logs[max(0, len(logs)-n):])
}
