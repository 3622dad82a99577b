package server

import (
	"context"
	"log/slog"
	"net"
	"strconv"

	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	"github.com/minik8s/minik8s/pkg/proxy/l2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// speaker answers ARP for the LoadBalancer addresses this node is elected for, on
// --lb-interfaces (pkg/proxy/l2).
type speaker struct {
	*l2.Speaker
	responder   *l2.Responder
	nodesSynced cache.InformerSynced
}

// newSpeaker opens the ARP sockets and watches Nodes (whose proxies' /healthz say which
// are live); nil without --lb-interfaces.
func newSpeaker(o Options, factory *apiclient.Informers, src proxy.Source, log *slog.Logger) (*speaker, error) {
	if len(o.LBInterfaces) == 0 {
		return nil, nil
	}
	_, portText, _ := net.SplitHostPort(o.HealthzAddress) // checked by Validate
	port, _ := strconv.Atoi(portText)
	responder, err := l2.NewResponder(o.LBInterfaces, log)
	if err != nil {
		return nil, err
	}
	nodes := factory.Nodes()
	s := &speaker{responder: responder, nodesSynced: nodes.HasSynced, Speaker: &l2.Speaker{
		Node: o.HostnameOverride, Source: src, Nodes: corelisters.NewNodeLister(nodes.GetIndexer()),
		HealthzPort: port, Announcer: responder, Segment: responder.Segment, Log: log}}
	on := func(any) { s.Changed() }
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: on, DeleteFunc: on, UpdateFunc: func(_, obj any) { on(obj) },
	}); err != nil {
		responder.Close()
		return nil, err
	}
	log.Info("answering ARP for elected load balancer addresses", "interfaces", o.LBInterfaces)
	return s, nil
}

// Run answers until ctx ends.
func (s *speaker) Run(ctx context.Context) {
	go s.responder.Run(ctx)
	s.Speaker.Run(ctx)
}
