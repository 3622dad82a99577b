// Package nodenet connects a node's pods to every other node's pods and to the outside, as
// minilet runs it: the kernel settings pods need, then, from the Node objects (a client-go
// informer), either one route per other node's pod CIDR via its InternalIP (host-gw) or a
// VXLAN overlay (vxlan), and one masquerade rule for traffic leaving the cluster. It
// publishes its choice and VTEP MAC as Node annotations, reports what it cannot reach as
// Events on its Node, and keeps the Node's NetworkUnavailable condition.
package nodenet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/vishvananda/netlink"

	"github.com/minik8s/minik8s/internal/nodeaddr"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/masq"
	"github.com/minik8s/minik8s/pkg/network/vxlan"
)

// The pod network modes (minilet --pod-network).
const (
	ModeHostGW = "host-gw" // routes via the other nodes' IPs: every node on one L2 segment
	ModeVXLAN  = "vxlan"   // an overlay: nodes anywhere their IPs reach each other
	ModeNone   = "none"    // the operator's CNI network connects nodes; minilet routes nothing
)

// Node annotations minilet publishes.
const (
	AnnotationPodNetwork = "networking.minik8s.io/pod-network" // the node's mode
	AnnotationVTEPMAC    = "networking.minik8s.io/vtep-mac"    // vxlan: its device's MAC
)

// Event reasons on the Node.
const (
	ReasonFailedToCreateRoute = "FailedToCreateRoute" // as Kubernetes' route controller
	ReasonPodCIDROverlap      = "PodCIDROverlap"
	ReasonPodNetworkMismatch  = "PodNetworkMismatch"
)

// resyncPeriod repairs what someone else changed (a deleted route, say) without a Node event.
const resyncPeriod = 30 * time.Second

// ValidateMode checks a --pod-network value.
func ValidateMode(mode string) error {
	switch mode {
	case ModeHostGW, ModeVXLAN, ModeNone:
		return nil
	}
	return fmt.Errorf("pod network %q: want %s, %s or %s", mode, ModeHostGW, ModeVXLAN, ModeNone)
}

// Config is one node's network as minilet's flags and Node say.
type Config struct {
	NodeName string
	NodeIP   net.IP
	PodCIDR  *net.IPNet
	Mode     string
	Bridge   string // the generated CNI network's bridge, checked before use; "" for an operator's network
}

// Node is a node's network, prepared.
type Node struct {
	cfg  Config
	dev  *vxlan.Device // vxlan only
	masq *masq.Rules   // not in ModeNone

	reported map[string]string // node -> last problem reported, so each is reported once
}

// Prepare checks what could clash (an occupied bridge), turns on IP forwarding and
// bridge-nf-call-iptables, and makes the overlay device (vxlan) or removes one left by an
// earlier mode. Nothing else is changed when it fails.
func Prepare(cfg Config) (*Node, error) {
	if err := ValidateMode(cfg.Mode); err != nil {
		return nil, err
	}
	if cfg.NodeIP == nil || cfg.PodCIDR == nil {
		return nil, errors.New("pod network: node IP and pod CIDR are needed")
	}
	if cfg.Bridge != "" {
		if err := checkBridge(cfg.Bridge, cfg.PodCIDR); err != nil {
			return nil, err
		}
	}
	if err := enableForwarding(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, reported: map[string]string{}}
	var err error
	switch cfg.Mode {
	case ModeVXLAN:
		if n.dev, err = vxlan.Ensure(cfg.NodeIP, cfg.PodCIDR); err != nil {
			return nil, err
		}
	case ModeHostGW:
		if err := vxlan.Remove(); err != nil { // left by an earlier --pod-network=vxlan
			return nil, err
		}
	}
	if cfg.Mode != ModeNone {
		if n.masq, err = masq.New(cfg.PodCIDR); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// PodMTU is the most pods' interfaces may carry in mode: the overlay's, uplink MTU less the
// VXLAN headers (vxlan), else 0 (the plugin's default).
func PodMTU(mode string, nodeIP net.IP) (int, error) {
	if mode != ModeVXLAN {
		return 0, nil
	}
	mtu, err := vxlan.UplinkMTU(nodeIP)
	if err != nil {
		return 0, err
	}
	return mtu - vxlan.Overhead, nil
}

// checkBridge refuses a bridge that already exists as something else or holds an address
// other than the pod CIDR's gateway: the bridge plugin would fail every pod on it.
func checkBridge(name string, podCIDR *net.IPNet) error {
	l, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pod bridge %s: %w", name, err)
	}
	if _, ok := l.(*netlink.Bridge); !ok {
		return fmt.Errorf("pod bridge %s (--cni-bridge) exists but is a %s, not a bridge; remove it or choose another name", name, l.Type())
	}
	gw := gateway(podCIDR)
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("addresses of pod bridge %s: %w", name, err)
	}
	for _, a := range addrs {
		if !a.IP.Equal(gw) || a.Mask.String() != podCIDR.Mask.String() {
			return fmt.Errorf("pod bridge %s (--cni-bridge) already has address %s, not %s/%d (the gateway of pod CIDR %s); remove the address or the bridge (ip link del %s) or choose another --cni-bridge",
				name, a.IPNet, gw, maskLen(podCIDR), podCIDR, name)
		}
	}
	return nil
}

func gateway(cidr *net.IPNet) net.IP {
	gw := slices.Clone(cidr.IP.To4())
	gw[3]++
	return gw
}

func maskLen(cidr *net.IPNet) int { ones, _ := cidr.Mask.Size(); return ones }

// enableForwarding turns on routing between pods and the node's links, and makes bridged pod
// traffic pass iptables (Services' DNAT of a pod on the same bridge needs it).
func enableForwarding() error {
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("enable IP forwarding (net.ipv4.ip_forward=1): %w", err)
	}
	const brnf = "/proc/sys/net/bridge/bridge-nf-call-iptables"
	if _, err := os.Stat(brnf); errors.Is(err, os.ErrNotExist) {
		out, err := exec.Command("modprobe", "br_netfilter").CombinedOutput()
		if err != nil {
			return fmt.Errorf("net.bridge.bridge-nf-call-iptables does not exist and loading br_netfilter failed (modprobe br_netfilter): %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	if err := os.WriteFile(brnf, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("make bridged traffic pass iptables (net.bridge.bridge-nf-call-iptables=1): %w", err)
	}
	return nil
}

// Cleanup removes what minilet made between nodes in the current network namespace: its
// routes, the VXLAN device, the egress chains and set. Pods' own interfaces are CNI's.
func Cleanup() error {
	var errs []error
	for cidr, err := range network.SyncPodRoutes(nil) {
		errs = append(errs, fmt.Errorf("%s: %w", cidr, err))
	}
	return errors.Join(append(errs, vxlan.Remove(), masq.Remove())...)
}

// Run keeps the node's routes or overlay and egress rules in line with the Node objects
// until ctx ends.
func (n *Node) Run(ctx context.Context, client kubernetes.Interface, rec record.EventRecorder) {
	if n.cfg.Mode == ModeNone {
		return
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := factory.Core().V1().Nodes()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "podnetwork"})
	defer queue.ShutDown()
	const key = "nodes"
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { queue.Add(key) },
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*corev1.Node); !ok || relevant(o) != relevant(cur.(*corev1.Node)) {
				queue.Add(key)
			}
		},
		DeleteFunc: func(any) { queue.Add(key) },
	})
	if err != nil {
		slog.Error("watch nodes for the pod network", "err", err)
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return
	}
	go func() {
		t := time.NewTicker(resyncPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				queue.ShutDown()
				return
			case <-t.C:
				queue.Add(key)
			}
		}
	}()
	queue.Add(key)
	for {
		k, quit := queue.Get()
		if quit {
			return
		}
		if err := n.sync(ctx, client, nodes.Lister(), rec); err != nil && ctx.Err() == nil {
			slog.Error("sync pod network", "err", err)
			queue.AddRateLimited(k)
		} else {
			queue.Forget(k)
		}
		queue.Done(k)
	}
}

// relevant is what of a Node the pod network depends on.
func relevant(n *corev1.Node) string {
	return strings.Join([]string{n.Spec.PodCIDR, nodeaddr.Of(n, corev1.NodeInternalIP), n.Annotations[AnnotationPodNetwork], n.Annotations[AnnotationVTEPMAC]}, " ")
}

// peerNode is another node the network reaches.
type peerNode struct {
	Name    string
	PodCIDR *net.IPNet
	IP      net.IP
	MAC     net.HardwareAddr
}

// sync makes routes/overlay and egress rules match the Node objects, publishes this node's
// annotations, reports problems once each and keeps NetworkUnavailable.
func (n *Node) sync(ctx context.Context, client kubernetes.Interface, lister corelisters.NodeLister, rec record.EventRecorder) error {
	all, err := lister.List(labels.Everything())
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	var self *corev1.Node
	for _, node := range all {
		if node.Name == n.cfg.NodeName {
			self = node
		}
	}
	if self == nil {
		return nil // not registered yet; its Add event comes
	}
	if err := n.publish(ctx, client, self); err != nil {
		return err
	}

	problems := map[string]problem{}
	var peers []peerNode
	noMasq := []string{n.cfg.PodCIDR.String(), n.cfg.NodeIP.String()}
	for _, node := range all {
		if node.Name == n.cfg.NodeName {
			continue
		}
		ip := net.ParseIP(nodeaddr.Of(node, corev1.NodeInternalIP))
		_, cidr, err := net.ParseCIDR(node.Spec.PodCIDR)
		if ip != nil {
			noMasq = append(noMasq, ip.String())
		}
		if ip == nil || err != nil {
			continue // not registered or given a pod CIDR yet
		}
		if clash := overlapping(cidr, n.cfg.PodCIDR, peers); clash != "" {
			problems[node.Name] = problem{ReasonPodCIDROverlap, fmt.Sprintf("Pod CIDR %s of node %s overlaps %s; not routing it", cidr, node.Name, clash)}
			continue
		}
		noMasq = append(noMasq, cidr.String())
		if mode := node.Annotations[AnnotationPodNetwork]; mode != "" && mode != n.cfg.Mode {
			problems[node.Name] = problem{ReasonPodNetworkMismatch, fmt.Sprintf("Node %s runs pod network %s, this node %s; not routing to it", node.Name, mode, n.cfg.Mode)}
			continue
		}
		p := peerNode{Name: node.Name, PodCIDR: cidr, IP: ip}
		if n.dev != nil {
			if p.MAC, err = net.ParseMAC(node.Annotations[AnnotationVTEPMAC]); err != nil {
				continue // its minilet has not published its VTEP yet; that change brings us back
			}
		}
		peers = append(peers, p)
	}

	var routes []network.PodRoute
	byCIDR := map[string]string{}
	for _, p := range peers {
		byCIDR[p.PodCIDR.String()] = p.Name
	}
	if n.dev != nil {
		vpeers := make([]vxlan.Peer, len(peers))
		for i, p := range peers {
			vpeers[i] = vxlan.Peer{Node: p.Name, PodCIDR: p.PodCIDR, NodeIP: p.IP, MAC: p.MAC}
		}
		for node, err := range n.dev.SyncPeers(vpeers) {
			problems[node] = problem{ReasonFailedToCreateRoute, fmt.Sprintf("Could not add the VXLAN entries of node %s: %v", node, err)}
		}
		routes = n.dev.Routes(vpeers)
	} else {
		for _, p := range peers {
			routes = append(routes, network.PodRoute{Dst: p.PodCIDR, Gw: p.IP})
		}
	}
	for cidr, err := range network.SyncPodRoutes(routes) {
		node := byCIDR[cidr]
		msg := fmt.Sprintf("Could not create route to pod CIDR %s of node %s: %v", cidr, node, err)
		if errors.Is(err, network.ErrNextHopNotOnLink) {
			msg += " (host-gw needs every node on one L2 segment; --pod-network=vxlan crosses routers)"
		}
		problems[node] = problem{ReasonFailedToCreateRoute, msg}
	}
	if err := n.masq.Sync(noMasq); err != nil {
		return fmt.Errorf("egress masquerade: %w", err)
	}
	n.report(self, rec, problems)
	return n.setCondition(ctx, client, self, len(peers), problems)
}

type problem struct{ reason, message string }

// overlapping names what cidr overlaps: this node's pod CIDR or an accepted peer's.
func overlapping(cidr, own *net.IPNet, peers []peerNode) string {
	overlaps := func(a, b *net.IPNet) bool { return a.Contains(b.IP) || b.Contains(a.IP) }
	if overlaps(cidr, own) {
		return "this node's pod CIDR " + own.String()
	}
	for _, p := range peers {
		if overlaps(cidr, p.PodCIDR) {
			return fmt.Sprintf("pod CIDR %s of node %s", p.PodCIDR, p.Name)
		}
	}
	return ""
}

// report records each new problem as a Warning Event on this node (and in the log), once.
func (n *Node) report(self *corev1.Node, rec record.EventRecorder, problems map[string]problem) {
	ref := &corev1.ObjectReference{Kind: "Node", Name: self.Name, UID: types.UID(self.Name)}
	for node, p := range problems {
		if n.reported[node] == p.message {
			continue
		}
		n.reported[node] = p.message
		slog.Warn("pod network", "reason", p.reason, "node", node, "problem", p.message)
		rec.Event(ref, corev1.EventTypeWarning, p.reason, p.message)
	}
	for node := range n.reported {
		if _, still := problems[node]; !still {
			delete(n.reported, node)
		}
	}
}

// publish records this node's mode (and VTEP MAC) on its Node for the other nodes.
func (n *Node) publish(ctx context.Context, client kubernetes.Interface, self *corev1.Node) error {
	want := map[string]any{AnnotationPodNetwork: n.cfg.Mode, AnnotationVTEPMAC: nil}
	if n.dev != nil {
		want[AnnotationVTEPMAC] = vxlan.MAC(n.cfg.NodeIP).String()
	}
	same := true
	for k, v := range want {
		cur, ok := self.Annotations[k]
		if (v == nil && ok) || (v != nil && cur != v) {
			same = false
		}
	}
	if same {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
	if _, err := client.CoreV1().Nodes().Patch(ctx, self.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("publish pod network annotations on node %s: %w", self.Name, err)
	}
	return nil
}

// setCondition keeps NetworkUnavailable: False once every other node is reached, True with
// the reasons while some cannot be.
func (n *Node) setCondition(ctx context.Context, client kubernetes.Interface, self *corev1.Node, reached int, problems map[string]problem) error {
	cond := corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated",
		Message: fmt.Sprintf("minilet routes pods to %d other nodes (%s)", reached, n.cfg.Mode)}
	if len(problems) > 0 {
		var msgs []string
		for _, p := range problems {
			msgs = append(msgs, p.message)
		}
		sort.Strings(msgs)
		cond.Status, cond.Reason, cond.Message = corev1.ConditionTrue, "NoRouteCreated", strings.Join(msgs, "; ")
	}
	now := metav1.Now().Rfc3339Copy()
	cond.LastHeartbeatTime, cond.LastTransitionTime = now, now
	for _, c := range self.Status.Conditions {
		if c.Type == cond.Type && c.Status == cond.Status {
			if c.Reason == cond.Reason && c.Message == cond.Message {
				return nil
			}
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if _, err := client.CoreV1().Nodes().PatchStatus(ctx, self.Name, patch); err != nil {
		return fmt.Errorf("set NetworkUnavailable on node %s: %w", self.Name, err)
	}
	return nil
}
