// Package apiproc runs an API server, bin/miniapi or kube-apiserver, as a process of its
// own on loopback, with certificates of one CA and an admin kubeconfig: what the
// benchmarks that compare the two (habench, crbench, membench) start and measure the same way.
package apiproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/bench/internal/kubeclient"
	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/auth/serviceaccount"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	"github.com/minik8s/minik8s/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Args are a server's command line for its directory and port.
type Args func(dir, port string) []string

// Server is one API server process.
type Server struct {
	Name, URL, Kubeconfig string
	Cmd                   *exec.Cmd
	logPath               string
	done                  chan struct{}
}

// EnsurePKI makes the CA the servers share in dir, and its saKey: the service-account
// signing key every server is given, so each accepts the others' tokens.
func EnsurePKI(dir string) (ca *pki.CA, saKey string, err error) {
	if ca, err = pki.EnsureCA(dir); err != nil {
		return nil, "", err
	}
	saKey = filepath.Join(dir, "sa.key")
	if _, err := serviceaccount.EnsureSigningKey(saKey); err != nil {
		return nil, "", err
	}
	return ca, saKey, nil
}

// Start copies the CA from caDir to dir's pki directory, where miniapi finds it (servers
// of one CA trust each other's tokens and certificates), writes a serving certificate
// (kube-apiserver's; miniapi issues its own) and an admin kubeconfig, and starts the
// process args give on a free loopback port.
func Start(ca *pki.CA, caDir, dir, name string, args Args) (*Server, error) {
	pkiDir := controlplane.PKIDir(dir)
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return nil, err
	}
	for _, file := range []string{pki.CACertFile, pki.CAKeyFile} {
		data, err := os.ReadFile(filepath.Join(caDir, file))
		if err == nil {
			err = os.WriteFile(filepath.Join(pkiDir, file), data, 0o600)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, _, _, err := ca.WriteServing(dir, "serving", []string{"127.0.0.1", "localhost"}); err != nil {
		return nil, err
	}
	p, err := freeport.One()
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(p)
	s := &Server{Name: name, URL: "https://127.0.0.1:" + port, Kubeconfig: filepath.Join(dir, "bench.kubeconfig"),
		logPath: filepath.Join(dir, "server.log"), done: make(chan struct{})}
	if err := ca.WriteKubeconfig(s.Kubeconfig, s.URL, "bench-admin", []string{"system:masters"}); err != nil {
		return nil, err
	}
	log, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	argv := args(dir, port)
	s.Cmd = exec.Command(argv[0], argv[1:]...)
	s.Cmd.Stdout, s.Cmd.Stderr = log, log
	s.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // none outlives the benchmark
	if err := s.Cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = s.Cmd.Wait(); log.Close(); close(s.done) }()
	return s, nil
}

// PID is the server's process id.
func (s *Server) PID() int { return s.Cmd.Process.Pid }

// WaitReady polls /readyz until it answers ok, the process exits or timeout passes.
func (s *Server) WaitReady(timeout time.Duration) error {
	c, err := s.Clients(1)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		body, err := c[0].RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("%s exited; log:\n%s", s.Name, s.LogTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %v; log:\n%s", s.Name, timeout, err, s.LogTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL and waits for it.
func (s *Server) Kill() {
	_ = s.Cmd.Process.Kill()
	<-s.done
}

// Stop ends the server as its service manager would, SIGKILL if it takes over 10s.
func (s *Server) Stop() {
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.Kill()
	}
}

// Clients are n admin clients of s, each on its own connection.
func (s *Server) Clients(n int) ([]*kubernetes.Clientset, error) { return ClientsOf(s.Kubeconfig, n) }

// Config is an admin client configuration of s on a connection of its own.
func (s *Server) Config() (*rest.Config, error) { return ConfigOf(s.Kubeconfig) }

// ConfigOf is kubeconfig's client configuration as kubeclient.Unlimited makes it (no
// rate limit, a connection of its own), with a 30s request timeout.
func ConfigOf(kubeconfig string) (*rest.Config, error) {
	cfg, err := kubeclient.Unlimited(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

// ClientsOf are n clients of kubeconfig, each on its own connection.
func ClientsOf(kubeconfig string, n int) ([]*kubernetes.Clientset, error) {
	return kubeclient.Clients(n, func() (*rest.Config, error) { return ConfigOf(kubeconfig) })
}

// LogTail is the end of the server's log, for an error.
func (s *Server) LogTail() string {
	data, _ := os.ReadFile(s.logPath)
	return string(data[max(0, len(data)-4096):])
}

// MiniapiArgs run the miniapi binary on etcd (TLS) or, with etcd nil, on bolt in its
// data directory, with the service account key saKey ("": its own).
func MiniapiArgs(binary string, etcd *etcdtest.Cluster, saKey string, extra ...string) Args {
	return func(dir, port string) []string {
		args := []string{binary, "--data-dir", dir, "--bind-address", "127.0.0.1", "--secure-port", port}
		if etcd != nil {
			args = append(args, "--store", "etcd://"+strings.Join(etcd.HostPorts, ","),
				"--etcd-cafile", etcd.TLS.CAFile, "--etcd-certfile", etcd.TLS.CertFile, "--etcd-keyfile", etcd.TLS.KeyFile)
		}
		if saKey != "" {
			args = append(args, "--service-account-signing-key-file", saKey)
		}
		return append(args, extra...)
	}
}

// KubeAPIServerArgs run kube-apiserver as kubeadm would, on loopback: client
// certificates of the CA, Node,RBAC authorization (the default admission plugins), the
// service account key saKey, its own etcd prefix on the TLS cluster etcd.
func KubeAPIServerArgs(binary string, etcd *etcdtest.Cluster, etcdPrefix, saKey string) Args {
	return func(dir, port string) []string {
		return []string{binary, "--etcd-servers", strings.Join(etcd.Endpoints, ","), "--etcd-prefix", etcdPrefix,
			"--etcd-cafile", etcd.TLS.CAFile, "--etcd-certfile", etcd.TLS.CertFile, "--etcd-keyfile", etcd.TLS.KeyFile,
			"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", port,
			"--tls-cert-file", filepath.Join(dir, "serving.crt"), "--tls-private-key-file", filepath.Join(dir, "serving.key"),
			"--cert-dir", dir, "--client-ca-file", filepath.Join(dir, pki.CACertFile), "--authorization-mode", "Node,RBAC",
			"--service-account-issuer", controlplane.DefaultIssuer, "--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
			"--service-cluster-ip-range", clusterdefaults.ServiceCIDR}
	}
}

// Namespace creates ns and its default ServiceAccount (kube-apiserver alone runs no
// controller that would) and waits until every server admits a pod in it.
func Namespace(servers []*Server, ns string) error {
	c, err := servers[0].Clients(1)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := c[0].CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := c[0].CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i, s := range servers {
		sc, err := s.Clients(1)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(30 * time.Second)
		pod := benchapi.Pod(ns, int64(i))
		pod.Name = fmt.Sprintf("warm-%d", i)
		for {
			if _, err = sc[0].CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s admits no pod in %s: %w", s.Name, ns, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}
