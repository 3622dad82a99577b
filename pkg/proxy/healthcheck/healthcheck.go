// Package healthcheck serves the health check node port of every Service of type
// LoadBalancer with externalTrafficPolicy Local (spec.healthCheckNodePort), as kube-proxy's
// service health server (pkg/proxy/healthcheck/service_health.go): a load balancer probes
// it on each node and sends traffic only to nodes answering 200, those holding a ready
// endpoint of the Service.
package healthcheck

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/proxy"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Server opens and closes the health check ports as Services come and go.
type Server struct {
	node    string                             // this node's name: which endpoints are local
	healthy func() bool                        // the proxy's own health (/healthz): serviceProxyHealthy
	listen  func(string) (net.Listener, error) // net.Listen("tcp4", addr); tests replace it
	log     *slog.Logger
	// Event, when set, reports a port that cannot be opened (miniproxy: kube-proxy's
	// Warning Event FailedToStartServiceHealthcheck on the Service), once until it opens.
	Event func(svc types.NamespacedName, note string)

	mu       sync.RWMutex
	services map[types.NamespacedName]*instance
	failed   map[types.NamespacedName]uint16 // ports reported as not opened
}

type instance struct {
	port      uint16
	srv       *http.Server
	endpoints int // local ready endpoints
}

// New is a server for node; healthy is the proxy's health.
func New(node string, healthy func() bool, log *slog.Logger) *Server {
	return &Server{node: node, healthy: healthy, log: log, services: map[types.NamespacedName]*instance{}, failed: map[types.NamespacedName]uint16{},
		listen: func(addr string) (net.Listener, error) { return net.Listen("tcp4", addr) }}
}

// Sync makes the open ports those of src's Services that need one (a port that changed is
// reopened) and counts each one's local ready endpoints, after a sync of the rules.
func (s *Server) Sync(src proxy.Source) error {
	svcs, err := src.Services()
	if err != nil {
		return err
	}
	want := map[types.NamespacedName]uint16{}
	for _, svc := range svcs {
		if svc.HealthCheckNodePort > 0 && svc.HealthCheckNodePort <= 65535 {
			want[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = uint16(svc.HealthCheckNodePort)
		}
	}
	counts := make(map[types.NamespacedName]int, len(want))
	for nsn := range want {
		n, err := s.localReady(src, nsn)
		if err != nil {
			return err
		}
		counts[nsn] = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for nsn, port := range s.failed {
		if want[nsn] != port {
			delete(s.failed, nsn)
		}
	}
	for nsn, inst := range s.services {
		if port, ok := want[nsn]; !ok || port != inst.port {
			s.log.Info("closing healthcheck", "service", nsn, "port", inst.port)
			_ = inst.srv.Close()
			delete(s.services, nsn)
		}
	}
	for nsn, port := range want {
		inst := s.services[nsn]
		if inst == nil {
			var err error
			if inst, err = s.open(nsn, port); err != nil {
				// As kube-proxy: logged, reported, tried again at the next sync.
				s.log.Error("failed to start healthcheck", "node", s.node, "service", nsn, "port", port, "err", err)
				if s.Event != nil && s.failed[nsn] != port {
					s.Event(nsn, fmt.Sprintf("node %s failed to start healthcheck %q on port %d: %v", s.node, nsn.String(), port, err))
				}
				s.failed[nsn] = port
				continue
			}
			delete(s.failed, nsn)
			s.services[nsn] = inst
		}
		inst.endpoints = counts[nsn]
	}
	return nil
}

// localReady counts the addresses of nsn's ready IPv4 endpoints on this node (an address
// counts once whatever its ports, as kube-proxy's LocalReadyEndpoints). Terminating
// endpoints do not count, even serving: a node with only those fails the check.
func (s *Server) localReady(src proxy.Source, nsn types.NamespacedName) (int, error) {
	list, err := src.ServiceSlices(nsn.Namespace, nsn.Name)
	if err != nil {
		return 0, fmt.Errorf("endpoint slices of %s: %w", nsn, err)
	}
	ips := map[string]bool{}
	for _, sl := range list {
		if sl.AddressType != discoveryv1.AddressTypeIPv4 { // another family's, as the IPv4 proxier's
			continue
		}
		for _, ep := range sl.Endpoints {
			if ep.Ready && ep.NodeName == s.node && ep.IP != "" {
				ips[ep.IP] = true
			}
		}
	}
	return len(ips), nil
}

func (s *Server) open(nsn types.NamespacedName, port uint16) (*instance, error) {
	l, err := s.listen(net.JoinHostPort("0.0.0.0", strconv.Itoa(int(port))))
	if err != nil {
		return nil, err
	}
	inst := &instance{port: port}
	inst.srv = &http.Server{Handler: handler{s, nsn}, ReadHeaderTimeout: 5 * time.Second}
	s.log.Info("opening healthcheck", "service", nsn, "port", port)
	go func() {
		if err := inst.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("healthcheck closed", "service", nsn, "err", err)
		}
	}()
	return inst, nil
}

// Close closes every port.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for nsn, inst := range s.services {
		_ = inst.srv.Close()
		delete(s.services, nsn)
	}
}

type handler struct {
	s   *Server
	nsn types.NamespacedName
}

// ServeHTTP answers as kube-proxy's hcHandler, byte for byte: 200 when the node has a
// local ready endpoint and the proxy is healthy, 503 otherwise, the same JSON body either
// way.
func (h handler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.s.mu.RLock()
	inst, ok := h.s.services[h.nsn]
	count := 0
	if ok {
		count = inst.endpoints
	}
	h.s.mu.RUnlock()
	if !ok {
		return // closed meanwhile, as kube-proxy: an empty 200
	}
	healthy := h.s.healthy()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(count))
	if count != 0 && healthy {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintf(w, "{\n\t\"service\": {\n\t\t\"namespace\": %q,\n\t\t\"name\": %q\n\t},\n\t\"localEndpoints\": %d,\n\t\"serviceProxyHealthy\": %v\n}",
		h.nsn.Namespace, h.nsn.Name, count, healthy)
}
