// Package nodeapi is minilet's node API, the kubelet's "server": HTTPS on --port (10250) for
// clients holding a certificate of the cluster CA (miniapi above all), serving /healthz,
// /pods, /containerLogs, /stats/summary, /metrics/resource, /metrics/cadvisor and the streaming /exec, /attach, /portForward and /run through
// the kubelet's own streaming library (k8s.io/cri-streaming) over containerd.
package nodeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// Runtime is the part of pkg/runtime the node API uses.
type Runtime interface {
	ListContainers(ctx context.Context, podUID string) ([]runtime.Container, error)
	Exec(ctx context.Context, id string, opts runtime.ExecOptions) (int, error)
	Attach(ctx context.Context, id string, opts runtime.AttachOptions) error
}

// Config says where and how the node API serves.
type Config struct {
	NodeName string
	Addr     string // host:port
	// CertFile and KeyFile are the serving certificate (--tls-cert-file,
	// --tls-private-key-file); ClientCAFile is the CA client certificates must chain to
	// (--client-ca-file).
	CertFile, KeyFile, ClientCAFile string
	// GetCertificate, if set, serves the certificate instead of CertFile and KeyFile
	// (a rotating one, --rotate-server-certificates).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Machine, if set, is the node's machine info that /spec/ serves.
	Machine func() (*cadvisorapi.MachineInfo, error)
	// Configz, if set, is the node agent's configuration that /configz serves, as the
	// kubelet's (a KubeletConfiguration).
	Configz func() any
}

// Server is the node API's HTTP handler.
type Server struct {
	cfg     Config
	rt      Runtime
	client  kubernetes.Interface
	healthy func() error
	mux     *http.ServeMux
	authz   *reviewer // nil without an API client (unit tests): the client CA alone decides
}

// New makes the handler. healthy answers /healthz; st (may be nil) serves /stats/summary,
// /metrics/resource and /metrics/cadvisor; metrics (may be nil) is minilet's /metrics;
// cfg.Machine (may be nil) serves /spec/, cfg.Configz (may be nil) /configz.
func New(cfg Config, rt Runtime, client kubernetes.Interface, healthy func() error, st Stats, metrics http.Handler) *Server {
	s := &Server{cfg: cfg, rt: rt, client: client, healthy: healthy, mux: http.NewServeMux()}
	if client != nil {
		s.authz = &reviewer{client: client, node: cfg.NodeName, cache: map[string]decision{}}
	}
	s.mux.HandleFunc("GET /healthz", s.serveHealthz)
	s.mux.HandleFunc("GET /pods", s.servePods)
	s.mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.serveLogs)
	for _, method := range []string{"GET", "POST"} {
		s.mux.HandleFunc(method+" /exec/{namespace}/{pod}/{container}", s.serveExec)
		s.mux.HandleFunc(method+" /attach/{namespace}/{pod}/{container}", s.serveAttach)
		s.mux.HandleFunc(method+" /portForward/{namespace}/{pod}", s.servePortForward)
	}
	s.mux.HandleFunc("POST /run/{namespace}/{pod}/{container}", s.serveRun)
	if st != nil {
		s.handleStats(st)
	}
	if metrics != nil {
		s.mux.Handle("GET /metrics", metrics)
	}
	if cfg.Configz != nil {
		s.mux.HandleFunc("GET /configz", s.serveConfigz)
	}
	if cfg.Machine != nil {
		s.mux.HandleFunc("GET /spec/{$}", s.serveSpec)
		s.mux.HandleFunc("GET /spec", s.serveSpec)
	}
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.authz != nil && !s.authz.authorize(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// TLSConfig loads the serving certificate and requires clients to present a certificate
// signed by the client CA: the node API runs commands in containers, so nobody anonymous
// gets in.
func TLSConfig(cfg Config) (*tls.Config, error) {
	var certs []tls.Certificate
	if cfg.GetCertificate == nil {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("serving certificate (--tls-cert-file %s, --tls-private-key-file %s): %w", cfg.CertFile, cfg.KeyFile, err)
		}
		certs = []tls.Certificate{cert}
	}
	caPEM, err := os.ReadFile(cfg.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("client CA (--client-ca-file): %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("client CA (--client-ca-file) %s holds no PEM certificate", cfg.ClientCAFile)
	}
	return &tls.Config{
		Certificates:   certs,
		GetCertificate: cfg.GetCertificate,
		ClientAuth:     tls.RequireAndVerifyClientCert,
		ClientCAs:      pool,
		MinVersion:     tls.VersionTLS12,
	}, nil
}

// ListenAndServe serves on cfg.Addr with TLSConfig until ctx ends. It returns once the
// listener is open; serving errors are logged.
func (s *Server) ListenAndServe(ctx context.Context) error {
	tlsCfg, err := TLSConfig(s.cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("node API: listen on %s: %w", s.cfg.Addr, err)
	}
	srv := &http.Server{Handler: s, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }, // follows and streams end with minilet
		ErrorLog:    slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug)}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("node API stopped", "addr", s.cfg.Addr, "err", err)
		}
	}()
	slog.Info("serving the node API", "address", s.cfg.Addr)
	return nil
}

func (s *Server) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	if err := s.healthy(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, "ok")
}

// servePods lists the pods bound to this node, as the kubelet's /pods does.
func (s *Server) servePods(w http.ResponseWriter, r *http.Request) {
	list, err := s.client.CoreV1().Pods(metav1.NamespaceAll).List(r.Context(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", s.cfg.NodeName).String()})
	if err != nil {
		http.Error(w, fmt.Sprintf("listing the pods of node %s: %v", s.cfg.NodeName, err), http.StatusInternalServerError)
		return
	}
	list.APIVersion, list.Kind = "v1", "PodList"
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = "v1", "Pod"
	}
	writeJSON(w, list)
}
