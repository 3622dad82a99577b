// Package apiserver serves the Kubernetes REST API over the store: discovery, CRUD, patch,
// watch and server-side tables for the resources of the registry, on TLS with x509 client
// authentication, so kubectl and client-go work unmodified. It routes requests and holds the
// resource handlers; the filters around them (filters, authn), discovery, the connect
// subresources (connect) and managed fields (fieldmanager) are its subpackages, as in
// k8s.io/apiserver.
package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/allocator"
	"github.com/minik8s/minik8s/pkg/control/apiserver/connect"
	"github.com/minik8s/minik8s/pkg/control/apiserver/discovery"
	"github.com/minik8s/minik8s/pkg/control/apiserver/fieldmanager"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/openapi"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/healthz"
)

// Config is what a Server needs.
type Config struct {
	Store    store.Interface
	Registry *registry.Registry
	// Metrics is where request metrics go; the server also serves it on /metrics.
	Metrics *prometheus.Registry
	Log     *slog.Logger
	// Ranges are the Service cluster IP and node port ranges; by default 10.96.0.0/12 and
	// 30000-32767 in Store.
	Ranges allocator.Ranges
	// AdvertiseAddress and SecurePort are where the `kubernetes` Service sends clients in
	// pods; without an address it gets no endpoints.
	AdvertiseAddress netip.Addr
	SecurePort       int
	// MasterLeaseTTL is how long this server's address stays in the `kubernetes` Service's
	// endpoints after its last renewal (0: DefaultMasterLeaseTTL; endpoints.go).
	MasterLeaseTTL time.Duration
	// Limits bound request time and requests in flight; the zero value gives
	// filters.DefaultLimits.
	Limits filters.Limits
	// Admission are the admission plugins beyond NamespaceLifecycle, which always runs first.
	Admission generic.Admission
	// NodeTransport carries proxied requests to the nodes' API (pods/log, exec, ...) with
	// miniapi's kubelet-client certificate; nil answers them 503.
	NodeTransport http.RoundTripper
	// NodeAddressTypes are the node address types tried in order to reach a node's API
	// (--kubelet-preferred-address-types); nil: nodeaddr.DefaultAPITypes.
	NodeAddressTypes []corev1.NodeAddressType
	// Extensions are API groups served by handlers of their own (metrics.k8s.io).
	Extensions []Extension
	// Profiling serves Go's profiles at /debug/pprof/, as kube-apiserver's --profiling:
	// non-resource paths, so only who RBAC lets get them (cluster-admin) reads them.
	Profiling bool
	// ReadyChecks are /readyz's checks beyond the health checks (kube-apiserver's
	// post-start hooks).
	ReadyChecks []healthz.HealthChecker
}

// Server is the API server's HTTP handler.
type Server struct {
	// store is read (GET, LIST, WATCH); every write goes through objects.
	store   store.Interface
	objects *generic.Store
	// lifecycle is NamespaceLifecycle, first in objects' chain, for the creates served
	// outside the registry too (TokenRequests).
	lifecycle *generic.NamespaceLifecycle
	// encodings shares the encodings of each stored version among its readers.
	encodings encodings
	reg       *registry.Registry
	log       *slog.Logger
	metrics   *metrics
	fields    *fieldmanager.Managers
	handler   http.Handler
	ranges    allocator.Ranges
	// protobufKinds are the resources that may answer in protobuf, protobufLists those
	// whose lists may too.
	protobufKinds, protobufLists map[*registry.Resource]bool
	// advertise is where the `kubernetes` Service's endpoints point.
	advertise netip.AddrPort
	leaseTTL  time.Duration
	// connect serves the subresources that reach pods, nodes and services (exec, logs, proxy).
	connect    *connect.Handler
	extensions []Extension
	discovery  *discovery.Handler
	limits     filters.Limits
	openAPI    *openapi.Handler
}

// New builds the server.
func New(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	if cfg.Ranges.ServiceIPs == nil {
		cfg.Ranges, _ = allocator.NewRanges(cfg.Store, allocator.DefaultServiceRange, allocator.DefaultNodePorts) // the defaults are valid
	}
	s := &Server{store: cfg.Store, reg: cfg.Registry, log: cfg.Log, metrics: newMetrics(cfg.Metrics), fields: fieldmanager.New(cfg.Registry, cfg.Log)}
	cfg.Metrics.MustRegister(newObjectCounts(cfg.Store, cfg.Registry))
	admission := cfg.Admission
	s.lifecycle = generic.NewNamespaceLifecycle(cfg.Store, cfg.Registry)
	admission.Mutating = append([]generic.MutatingAdmission{s.lifecycle}, admission.Mutating...)
	s.objects = generic.New(generic.Config{Store: cfg.Store, Registry: cfg.Registry, Ranges: cfg.Ranges,
		Admission: admission, Fields: s.fields, Stored: s.encodings.written, Log: cfg.Log})
	s.protobufKinds, s.protobufLists = protobufResources(cfg.Registry)
	s.connect = &connect.Handler{Store: cfg.Store, Objects: s.objects, Registry: cfg.Registry,
		NodeTransport: cfg.NodeTransport, NodeAddressTypes: cfg.NodeAddressTypes, Log: cfg.Log}
	s.ranges, s.advertise = cfg.Ranges, netip.AddrPortFrom(cfg.AdvertiseAddress, uint16(cfg.SecurePort))
	if s.leaseTTL = cfg.MasterLeaseTTL; s.leaseTTL <= 0 {
		s.leaseTTL = DefaultMasterLeaseTTL
	}
	mux := http.NewServeMux()
	// kube-apiserver's health checks, by the names tools look for ("etcd" is the store's,
	// whichever engine it is; not "log", which watches klog): each also under its own path,
	// ?verbose lists them.
	checks := []healthz.HealthChecker{healthz.PingHealthz, healthz.NamedCheck("etcd", s.checkStore)}
	healthz.InstallHandler(mux, checks...)
	healthz.InstallLivezHandler(mux, checks...)
	healthz.InstallReadyzHandler(mux, append(checks, cfg.ReadyChecks...)...)
	mux.HandleFunc("/version", discovery.ServeVersion)
	mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{cfg.Metrics, upstreamMetrics}, promhttp.HandlerOpts{}))
	if cfg.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s.discovery = discovery.New(cfg.Registry)
	for _, e := range cfg.Extensions {
		s.AddExtension(e)
	}
	mux.HandleFunc("/api", s.discovery.ServeLegacyVersions)
	mux.HandleFunc("/apis", s.discovery.ServeGroups)
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/apis/", s.serveAPI)
	s.openAPI = openapi.NewHandler(cfg.Registry, discovery.KubernetesVersion, cfg.Log)
	s.openAPI.Register(mux) // /openapi/v2, /openapi/v3/...
	if cfg.Limits == (filters.Limits{}) {
		cfg.Limits = filters.DefaultLimits
	}
	s.limits = cfg.Limits
	h := s.metrics.instrument(fieldmanager.WithFieldOwner(mux))
	inFlight := filters.NewInFlight(cfg.Limits)
	inFlight.Register(cfg.Metrics)
	s.handler = filters.WithRequestInfo(inFlight.Limit(h)) // a no-op under newHTTPServer's: one parse
	return s
}

// OpenAPI returns the served OpenAPI documents, which custom resources' join.
func (s *Server) OpenAPI() *openapi.Handler { return s.openAPI }

// Handler returns the unauthenticated handler with the in-flight limits and authorization
// (tests and the authenticating wrapper use it).
func (s *Server) Handler() http.Handler { return s.handler }

// checkStore is the store's health: it answers a read within two seconds.
func (s *Server) checkStore(r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	_, _, err := s.store.List(ctx, "/registry/core/namespaces/default")
	return err
}

// serveAPI routes /api/... and /apis/... to discovery or to a resource.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	ri, err := filters.RequestInfoOf(r)
	if err != nil {
		responsewriters.WriteError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if s.connect.Serve(w, r, ri) || s.serveExtension(w, r) {
		return
	}
	if !ri.IsResourceRequest { // discovery: /api/VERSION, /apis/GROUP, /apis/GROUP/VERSION
		switch parts := strings.Split(strings.Trim(ri.Path, "/"), "/"); {
		case len(parts) == 1 && parts[0] == "api": // /api/, served as /api (kube-apiserver does)
			s.discovery.ServeLegacyVersions(w, r)
			return
		case len(parts) == 1 && parts[0] == "apis": // /apis/
			s.discovery.ServeGroups(w, r)
			return
		case len(parts) == 2 && parts[0] == "api":
			s.discovery.ServeResourceList(w, r, schema.GroupVersion{Version: parts[1]})
			return
		case len(parts) == 2 && parts[0] == "apis":
			s.discovery.ServeGroup(w, r, parts[1])
			return
		case len(parts) == 3 && parts[0] == "apis":
			s.discovery.ServeResourceList(w, r, schema.GroupVersion{Group: parts[1], Version: parts[2]})
			return
		}
	}
	res, info, err := s.resolve(ri)
	if err != nil {
		discovery.WriteError(w, r, err)
		return
	}
	s.metrics.observeResource(r, info)
	s.serveResource(w, r, res, info)
}

// resolve finds the resource a resource request names.
func (s *Server) resolve(ri *request.RequestInfo) (*registry.Resource, requestInfo, error) {
	info, ok := resourceRequest(ri)
	if !ok {
		return nil, info, discovery.NotServed()
	}
	if discovery.IsLegacyBindings(info.GroupVersion.WithResource(info.Resource)) {
		if info.Name != "" || info.Subresource != "" {
			return nil, info, discovery.NotServed() // a collection only
		}
		info.Resource, info.Subresource = "pods", "binding" // the pod is named by the Binding
	}
	res, found := s.reg.Lookup(info.GroupVersion.WithResource(info.Resource))
	if !found {
		return nil, info, discovery.NotServedIn(s.reg, info.GroupVersion.Group)
	}
	custom := registry.IsCustom(res.GVK())
	// A path of the other scope: kube-apiserver has no route (405 for a collection's POST
	// and DELETE), apiextensions-apiserver hands a custom resource's on to the last handler.
	// A namespaced resource is listed and watched across namespaces.
	if res.Namespaced && info.Namespace == "" && info.Verb != "list" && info.Verb != "watch" ||
		!res.Namespaced && info.Namespace != "" && (custom || info.Resource != "namespaces") {
		switch {
		case custom:
			return nil, info, discovery.ErrPageNotFound
		case res.Namespaced && info.Name == "":
			return nil, info, methodNotAllowed()
		}
		return nil, info, discovery.NotServed()
	}
	if info.Subresource != "" && !res.HasSubresource(info.Subresource) {
		if custom { // apiextensions-apiserver's words, the object's existence unasked
			return nil, info, apierrors.NewNotFound(res.GroupResource(), info.Name)
		}
		// Not "pods NAME not found": the pod may well exist (kubectl logs, exec). Details
		// without a name and kube-apiserver's words for a route it lacks (kubectl scale of
		// a Job shows them): kubectl debug reads the details to say ephemeral containers
		// are not served.
		return nil, info, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Details: &metav1.StatusDetails{}, Message: "the server could not find the requested resource"}}
	}
	// A namespace's requests carry its name as their namespace, which is what they are
	// authorized in (Kubernetes'); the object itself is cluster-scoped.
	if !res.Namespaced {
		info.Namespace = ""
	}
	return res, info, nil
}

// ListenAndServeTLS serves the API on addr until ctx ends: h (the authenticating wrapper
// of Handler) with the request timeout and panic recovery around it.
func (s *Server) ListenAndServeTLS(ctx context.Context, addr string, tlsCfg *tls.Config, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := s.newHTTPServer(ctx, h, headerTimeout)
	srv.TLSConfig = tlsCfg
	// Serving stops at once when Shutdown starts; this returns after Shutdown has drained
	// the connections, so nothing of the server outlives it.
	ctx, stop := context.WithCancel(ctx)
	shutDown := make(chan struct{})
	go func() {
		defer close(shutDown)
		<-ctx.Done()
		drain, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(drain)
	}()
	err = srv.ServeTLS(ln, "", "")
	stop()
	<-shutDown
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// headerTimeout bounds how long a client may take to send a request's headers (and its TLS
// handshake): a client trickling them in (slow-loris) does not hold a connection for long.
const headerTimeout = 10 * time.Second

// newHTTPServer is the HTTP server of h with the outer filters and the connection limits.
func (s *Server) newHTTPServer(ctx context.Context, h http.Handler, headerTimeout time.Duration) *http.Server {
	warm := filters.OnWarmStacks(h, time.Minute, ctx.Done())
	return &http.Server{
		Handler:           filters.RecoverPanics(filters.WithRequestInfo(filters.WithPrettyJSON(filters.WithRequestTimeout(warm, s.limits.RequestTimeout))), s.log),
		ReadHeaderTimeout: headerTimeout,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		// Requests (watches above all) end when the server stops.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}
