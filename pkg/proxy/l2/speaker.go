package l2

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/minik8s/minik8s/internal/nodeaddr"
	"github.com/minik8s/minik8s/pkg/proxy"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// Announcer is what a Speaker drives: a Responder, or a fake in tests.
type Announcer interface{ Set([]netip.Addr) }

// Speaker decides which LoadBalancer addresses this node answers for. A node is a
// candidate while its proxy's /healthz answers 200 (what cloud load balancers probe on
// kube-proxy, port 10256), and, for a Service with externalTrafficPolicy Local, only when
// it has a ready endpoint of that Service (another node would drop the traffic or lose the
// client address); a Service with no ready endpoint anywhere is not answered at all. Among
// the candidates Elect picks one, on every node alike.
type Speaker struct {
	Node string
	// Source is read when set (miniproxy: its informers' records); otherwise Services and
	// Slices.
	Source      proxy.Source
	Services    corelisters.ServiceLister
	Slices      discoverylisters.EndpointSliceLister
	Nodes       corelisters.NodeLister
	HealthzPort int
	Announcer   Announcer
	Log         *slog.Logger
	// Interval is how often the other nodes' proxies are probed (and how fast a failed
	// node's addresses move); Probe says whether one answers (nil: HTTP GET /healthz).
	Interval time.Duration
	Probe    func(ctx context.Context, nodeIP string) bool
	// Segment is the subnet of this node's interface an address belongs to (false: none
	// of them holds it, so this node cannot answer for it); only nodes whose address is
	// in that subnet are candidates, since only they share the segment. nil: every node.
	Segment func(netip.Addr) (netip.Prefix, bool)

	kick chan struct{}
	once sync.Once
}

func (s *Speaker) init() {
	s.once.Do(func() {
		s.kick = make(chan struct{}, 1)
		if s.Interval == 0 {
			s.Interval = time.Second
		}
		if s.Probe == nil {
			client := &http.Client{Timeout: s.Interval}
			s.Probe = func(ctx context.Context, ip string) bool {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, strconv.Itoa(s.HealthzPort))+"/healthz", nil)
				if err != nil {
					return false
				}
				resp, err := client.Do(req)
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			}
		}
	})
}

// Changed asks for the addresses to be worked out again (a Service, slice or Node changed).
func (s *Speaker) Changed() {
	s.init()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run probes the other nodes every Interval and re-elects when a node came or went, or
// at once when something changed, until ctx ends; then it answers for nothing.
func (s *Speaker) Run(ctx context.Context) {
	s.init()
	defer s.Announcer.Set(nil)
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	live := s.liveNodes(ctx)
	for elect := true; ; {
		if elect {
			if owned, err := s.Owned(live); err != nil {
				s.Log.Error("working out the load balancer addresses to answer for", "err", err)
			} else {
				s.Announcer.Set(owned)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
			elect = true
		case <-tick.C:
			next := s.liveNodes(ctx)
			if elect = !mapsEqual(live, next); elect {
				s.Log.Info("nodes answering for load balancer addresses changed", "live", slices.Sorted(maps.Keys(next)))
			}
			live = next
		}
	}
}

// liveNodes probes every other node's proxy at once; this node is live while it runs.
func (s *Speaker) liveNodes(ctx context.Context) map[string]bool {
	nodes, err := s.Nodes.List(labels.Everything())
	live := map[string]bool{s.Node: true}
	if err != nil {
		return live
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		ip := nodeaddr.Of(n, corev1.NodeInternalIP)
		if n.Name == s.Node || ip == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.Probe(ctx, ip) {
				mu.Lock()
				live[n.Name] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return live
}

// Owned are the LoadBalancer addresses this node wins, given the live nodes.
func (s *Speaker) Owned(live map[string]bool) ([]netip.Addr, error) {
	src := s.Source
	if src == nil {
		src = proxy.Listers(s.Services, s.Slices)
	}
	svcs, err := src.Services()
	if err != nil {
		return nil, err
	}
	var nodeAddrs map[string]netip.Addr
	if s.Segment != nil {
		nodes, err := s.Nodes.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		nodeAddrs = map[string]netip.Addr{}
		for _, n := range nodes {
			if a, err := netip.ParseAddr(nodeaddr.Of(n, corev1.NodeInternalIP)); err == nil {
				nodeAddrs[n.Name] = a
			}
		}
	}
	var owned []netip.Addr
	for _, svc := range svcs {
		if svc.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		var ips []netip.Addr
		for _, ip := range svc.LoadBalancerIPs {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				ips = append(ips, a)
			}
		}
		if len(ips) == 0 {
			continue
		}
		var segment netip.Prefix
		if s.Segment != nil {
			var ok bool
			if segment, ok = s.Segment(ips[0]); !ok {
				continue
			}
		}
		withEndpoints, err := readyNodes(src, svc)
		if err != nil {
			return nil, err
		}
		if len(withEndpoints) == 0 {
			continue // nothing would answer behind the address
		}
		local := svc.ExternalPolicyLocal
		var candidates []string
		for n := range live {
			if s.Segment != nil && n != s.Node && !segment.Contains(nodeAddrs[n]) {
				continue // on another segment: its ARP replies would not reach this one
			}
			if !local || withEndpoints[n] {
				candidates = append(candidates, n)
			}
		}
		// Services sharing an address agree: the election hashes the address.
		if Elect(ips[0].String(), candidates) == s.Node {
			owned = append(owned, ips...)
		}
	}
	slices.SortFunc(owned, netip.Addr.Compare)
	return slices.Compact(owned), nil
}

// readyNodes are the nodes holding a ready endpoint of svc ("" for endpoints without a
// node, which still make the Service answerable).
func readyNodes(src proxy.Source, svc *proxy.ServiceRecord) (map[string]bool, error) {
	list, err := src.ServiceSlices(svc.Namespace, svc.Name)
	if err != nil {
		return nil, fmt.Errorf("endpoint slices of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	nodes := map[string]bool{}
	for _, sl := range list {
		for _, ep := range sl.Endpoints {
			if ep.Ready {
				nodes[ep.NodeName] = true
			}
		}
	}
	return nodes, nil
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
