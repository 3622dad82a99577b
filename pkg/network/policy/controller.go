package policy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	goipt "github.com/coreos/go-iptables/iptables"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	"github.com/minik8s/minik8s/pkg/proxy/runner"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
	anplisters "sigs.k8s.io/network-policy-api/pkg/client/listers/apis/v1alpha1"
)

// Controller keeps the node's policy chains and sets equal to what the API holds.
type Controller struct {
	inf       Informers
	admin     *AdminInformers // nil: no admin tiers
	factories []Factory
	node      string
	log       *slog.Logger
	// NetNS, when set, is the network namespace whose iptables and ipsets are written (a
	// test's or a lab's node); empty: the process's own.
	NetNS string
	// MinSyncPeriod bounds how often syncs run; SyncPeriod is the longest time between two.
	MinSyncPeriod, SyncPeriod time.Duration

	sets    ipset.Syncer
	written string          // the whole ruleset as written (Ruleset.Restore(nil)); "": unknown
	chains  map[string]bool // our chains the kernel holds (nil: read them first)
	setsNow map[string]bool // our sets the kernel holds
	// model is what the last sync wrote, which pod changes update (nil: build everything
	// next); lastFull is when the last full sync ended.
	model    *model
	lastFull time.Time
	// statusTried: the admin policies' status writes tried (status.go).
	statusTried map[string]int64

	mu    sync.Mutex
	dirty map[string]bool // the pods (namespace/name) changed since the last sync
	full  bool            // a namespace or a policy changed since: build everything
}

// Informer is a shared informer with its lister, as client-go's informer factories give
// them (informers.SharedInformerFactory's Core().V1().Pods(), for one).
type Informer[L any] interface {
	Informer() cache.SharedIndexInformer
	Lister() L
}

// Factory starts the informers it made and stops them: client-go's informer factories.
type Factory interface {
	Start(stop <-chan struct{})
	Shutdown()
}

// Informers are what the controller reads of the API. Given one by one rather than as
// client-go's informers.SharedInformerFactory: that package links a typed client and an
// informer of every API group, and registers all their kinds at start, in every binary
// that imports this package; miniproxy does, for its explain command's verdicts, and
// would pay it in RSS (docs/performance.md, miniproxy).
type Informers struct {
	Pods            Informer[corelisters.PodLister]
	Namespaces      Informer[corelisters.NamespaceLister]
	NetworkPolicies Informer[networkinglisters.NetworkPolicyLister]
	ServiceCIDRs    Informer[networkinglisters.ServiceCIDRLister]
	// Services give the node ports (see InputChain); nil: none pass InputChain.
	Services Informer[corelisters.ServiceLister]
}

// AdminInformers are what the admin tiers read: the policies, and the Nodes their egress
// node peers select (an informer of the core factory, which Run starts too; it caches only
// the nodes' labels and addresses, see nodePeerFields, so it must be no other reader's).
type AdminInformers struct {
	AdminNetworkPolicies         Informer[anplisters.AdminNetworkPolicyLister]
	BaselineAdminNetworkPolicies Informer[anplisters.BaselineAdminNetworkPolicyLister]
	Nodes                        Informer[corelisters.NodeLister]
	// Status writes the conditions of what the policies ask and this enforcement lacks
	// (status.go); nil: not written.
	Status StatusWriter
}

// StatusWriter writes an AdminNetworkPolicy's status: the typed client's
// AdminNetworkPolicies(), which policyinformers wires. An interface, not the typed client's
// type, because miniproxy's explain links this package: the typed client brings client-go's
// scheme of every API group (miniproxy's binary 19.8 -> 30.7 MB of text).
type StatusWriter interface {
	UpdateStatus(ctx context.Context, anp *anpv1alpha1.AdminNetworkPolicy, opts metav1.UpdateOptions) (*anpv1alpha1.AdminNetworkPolicy, error)
}

// NewController makes the controller of node's pods from inf, made by factory; Run starts
// factory.
func NewController(factory Factory, inf Informers, node string, log *slog.Logger) *Controller {
	c := &Controller{inf: inf, factories: []Factory{factory}, node: node, log: log, MinSyncPeriod: 100 * time.Millisecond, SyncPeriod: time.Minute}
	// Ask for the informers now, so that factory.Start starts them.
	inf.Pods.Informer()
	inf.Namespaces.Informer()
	inf.NetworkPolicies.Informer()
	inf.ServiceCIDRs.Informer()
	if inf.Services != nil {
		if err := inf.Services.Informer().SetTransform(nodePortFields); err != nil {
			c.log.Warn("network policy: services are cached whole", "err", err) // started already: only memory lost
		}
	}
	return c
}

// nodePortFields keeps of a Service what the controller reads, its ports' protocols and node
// ports, as nodePeerFields does of a Node.
func nodePortFields(obj any) (any, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil // a tombstone
	}
	out := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion}}
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			out.Spec.Ports = append(out.Spec.Ports, corev1.ServicePort{Protocol: p.Protocol, NodePort: p.NodePort})
		}
	}
	return out, nil
}

// nodePorts are the node ports of services, by protocol, sorted.
func nodePorts(services []*corev1.Service) map[corev1.Protocol][]int32 {
	out := map[corev1.Protocol][]int32{}
	for _, s := range services {
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 && !slices.Contains(out[p.Protocol], p.NodePort) {
				out[p.Protocol] = append(out[p.Protocol], p.NodePort)
			}
		}
	}
	for _, ports := range out {
		slices.Sort(ports)
	}
	return out
}

// WithAdmin enforces the AdminNetworkPolicies and the BaselineAdminNetworkPolicy of inf,
// made by factory, around the NetworkPolicies; call it before Run, whose start of factory
// finds them served (miniapi installs their definitions as it starts, see package
// admincrd).
func (c *Controller) WithAdmin(factory Factory, inf AdminInformers) *Controller {
	c.admin = &inf
	c.factories = append(c.factories, factory)
	c.statusTried = map[string]int64{}
	inf.AdminNetworkPolicies.Informer()
	inf.BaselineAdminNetworkPolicies.Informer()
	if err := inf.Nodes.Informer().SetTransform(nodePeerFields); err != nil {
		c.log.Warn("network policy: nodes are cached whole", "err", err) // started already: only memory lost
	}
	return c
}

// nodePeerFields keeps of a Node what node peers read, its labels and addresses: not its
// images, conditions and the rest, which every node's informer would otherwise hold for
// every node.
func nodePeerFields(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil // a tombstone
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels},
		Status:     corev1.NodeStatus{Addresses: n.Status.Addresses},
	}, nil
}

// Run syncs at every change of pods, namespaces or policies until ctx ends, then leaves the
// rules in place (a restarting minilet keeps its pods isolated).
func (c *Controller) Run(ctx context.Context) error {
	r := runner.New(func() {
		if res, err := c.syncChanges(ctx); err != nil {
			c.log.Error("network policy sync failed", "err", err)
		} else if res != nil {
			c.log.Debug("network policy sync", "full", res.Full, "pods", res.Pods, "chains", res.Chains, "sets", res.Sets, "setLines", res.SetLines, "rulesWritten", res.RulesWritten, "took", res.Took)
		}
	}, c.MinSyncPeriod, c.SyncPeriod)
	infs, err := c.watch(r.Run)
	if err != nil {
		return err
	}
	for _, f := range c.factories {
		f.Start(ctx.Done())
		defer f.Shutdown() // its informers' goroutines end before Run returns
	}
	for _, inf := range infs {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) && ctx.Err() == nil {
			return fmt.Errorf("network policy: informer did not sync")
		}
	}
	r.Loop(ctx)
	return nil
}

// watch marks what changes in the informers, pods by name and anything else as a whole,
// and calls kick at each change; it returns the informers to wait for.
func (c *Controller) watch(kick func()) ([]cache.SharedIndexInformer, error) {
	pod := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.mu.Lock()
			if c.dirty == nil {
				c.dirty = map[string]bool{}
			}
			c.dirty[key] = true
			c.mu.Unlock()
		}
		kick()
	}
	full := func(any) {
		c.mu.Lock()
		c.full = true
		c.mu.Unlock()
		kick()
	}
	pods := c.inf.Pods.Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: pod, UpdateFunc: func(_, obj any) { pod(obj) }, DeleteFunc: pod,
	}); err != nil {
		return nil, err
	}
	infs := []cache.SharedIndexInformer{
		pods,
		c.inf.Namespaces.Informer(),
		c.inf.NetworkPolicies.Informer(),
		c.inf.ServiceCIDRs.Informer(),
	}
	if c.admin != nil {
		infs = append(infs, c.admin.AdminNetworkPolicies.Informer(), c.admin.BaselineAdminNetworkPolicies.Informer())
	}
	for _, inf := range infs[1:] {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: full, UpdateFunc: func(_, obj any) { full(obj) }, DeleteFunc: full,
		}); err != nil {
			return nil, err
		}
	}
	if c.inf.Services != nil {
		// Only node ports matter: a Service without one changes no rule.
		withNodePorts := func(obj any) {
			if s, ok := obj.(*corev1.Service); !ok || len(nodePorts([]*corev1.Service{s})) > 0 {
				full(obj)
			}
		}
		services := c.inf.Services.Informer()
		if _, err := services.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: withNodePorts, DeleteFunc: withNodePorts,
			UpdateFunc: func(old, obj any) {
				a, okA := old.(*corev1.Service)
				b, okB := obj.(*corev1.Service)
				if !okA || !okB || !reflect.DeepEqual(nodePorts([]*corev1.Service{a}), nodePorts([]*corev1.Service{b})) {
					full(obj)
				}
			},
		}); err != nil {
			return nil, err
		}
		infs = append(infs, services)
	}
	if c.admin != nil {
		// Only a node's labels and addresses matter to node peers, not its status heartbeats.
		nodes := c.admin.Nodes.Informer()
		if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: full, DeleteFunc: full,
			UpdateFunc: func(old, obj any) {
				if a, b, ok := nodePair(old, obj); !ok || !sameToNodePeers(a, b) {
					full(obj)
				}
			},
		}); err != nil {
			return nil, err
		}
		infs = append(infs, nodes)
	}
	return infs, nil
}

func nodePair(old, obj any) (*corev1.Node, *corev1.Node, bool) {
	a, ok1 := old.(*corev1.Node)
	b, ok2 := obj.(*corev1.Node)
	return a, b, ok1 && ok2
}

// sameToNodePeers tells whether two versions of a node are the same to node peers: the
// same labels and addresses.
func sameToNodePeers(a, b *corev1.Node) bool {
	return maps.Equal(a.Labels, b.Labels) && slices.Equal(a.Status.Addresses, b.Status.Addresses)
}

// SyncResult says what one sync did.
type SyncResult struct {
	Full         bool // everything built; false: only changed pods applied
	Pods         int  // the pods whose changes were applied (not Full)
	Chains, Sets int  // chains and sets written (Full: all of them)
	SetLines     int  // ipset restore lines written
	RulesWritten bool // false: the rules were unchanged, only set members (if any) changed
	Took         time.Duration
}

// syncChanges applies what changed since the last sync: only the changed pods when
// nothing else changed, else (and every SyncPeriod, or when applying pods failed)
// everything. A nil result: nothing to do.
func (c *Controller) syncChanges(ctx context.Context) (*SyncResult, error) {
	c.mu.Lock()
	dirty, full := c.dirty, c.full
	c.dirty, c.full = nil, false
	c.mu.Unlock()
	if !full && c.model != nil && time.Since(c.lastFull) < c.SyncPeriod && c.model.ipvs == c.hasIPVS() {
		if len(dirty) == 0 {
			return nil, nil
		}
		res, err := c.SyncPods(ctx, dirty)
		if err == nil {
			return &res, nil
		}
		c.log.Error("network policy: applying pod changes failed, building everything", "err", err)
	}
	res, err := c.Sync(ctx)
	return &res, err
}

// Sync writes the rules and sets of what the informers hold now.
func (c *Controller) Sync(ctx context.Context) (SyncResult, error) {
	start := time.Now()
	c.model = nil
	st, err := c.state()
	if err != nil {
		return SyncResult{}, err
	}
	if c.admin != nil && c.admin.Status != nil {
		for _, err := range reportUnsupported(ctx, c.admin.Status, st.AdminPolicies, c.statusTried) {
			c.log.Warn("network policy: an admin policy asks for what is not enforced; its status could not say so", "err", err)
		}
	}
	rs, m := build(st)
	var res SyncResult
	err = c.inNetNS(func() error {
		var err error
		res, err = c.write(ctx, rs)
		return err
	})
	if err == nil {
		// From its end: a full sync longer than SyncPeriod must not make the next one full.
		c.model, c.lastFull = m, time.Now()
	}
	res.Full, res.Took = true, time.Since(start)
	return res, err
}

// SyncPods applies the changes of pods (namespace/name) to what the last sync wrote: the
// sets' members in one ipset restore, and only when a pod of the node gains, loses or
// changes chains, those chains (and the jumps to them) in one iptables-restore --noflush.
// Any failure leaves the next sync to build everything.
func (c *Controller) SyncPods(ctx context.Context, keys map[string]bool) (SyncResult, error) {
	start := time.Now()
	m := c.model
	if m == nil {
		return SyncResult{}, fmt.Errorf("no sync yet to apply pod changes to")
	}
	c.model = nil // until written
	lister := c.inf.Pods.Lister()
	now := map[string]*corev1.Pod{}
	for key := range keys {
		ns, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			return SyncResult{}, err
		}
		p, err := lister.Pods(ns).Get(name)
		if err != nil && !apierrors.IsNotFound(err) {
			return SyncResult{}, err
		}
		now[key] = p
	}
	d := m.applyPods(now)
	res := SyncResult{Pods: len(keys), Chains: len(d.chains), Sets: len(d.fresh), SetLines: strings.Count(d.sets, "\n")}
	err := c.inNetNS(func() error {
		if err := ipset.Restore(ctx, d.sets); err != nil {
			return err
		}
		for _, s := range d.fresh {
			c.setsNow[s] = true
		}
		if len(d.fresh) > 0 {
			c.sets.Reset() // it knows not the sets made here: it reads the kernel next time
		}
		if input := d.rules(); input != "" {
			if err := restore(ctx, input); err != nil {
				return err
			}
			for _, ch := range d.chains {
				c.chains[ch.Name] = true
			}
			for _, ch := range d.gone {
				delete(c.chains, ch)
			}
			c.written, res.RulesWritten = m.ruleset().Restore(nil), true
		}
		return nil
	})
	if err != nil {
		c.written, c.chains = "", nil
		c.sets.Reset()
		return res, err
	}
	c.model = m
	res.Took = time.Since(start)
	return res, nil
}

func (c *Controller) state() (*State, error) {
	st := &State{Node: c.node}
	var err error
	if st.Pods, err = c.inf.Pods.Lister().List(labels.Everything()); err != nil {
		return nil, err
	}
	if st.Namespaces, err = c.inf.Namespaces.Lister().List(labels.Everything()); err != nil {
		return nil, err
	}
	if st.Policies, err = c.inf.NetworkPolicies.Lister().List(labels.Everything()); err != nil {
		return nil, err
	}
	cidrs, err := c.inf.ServiceCIDRs.Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, sc := range cidrs {
		st.ServiceCIDRs = append(st.ServiceCIDRs, sc.Spec.CIDRs...)
	}
	slices.Sort(st.ServiceCIDRs)
	if c.inf.Services != nil {
		services, err := c.inf.Services.Lister().List(labels.Everything())
		if err != nil {
			return nil, err
		}
		st.NodePorts = nodePorts(services)
	}
	st.IPVS = c.hasIPVS()
	if c.admin == nil {
		return st, nil
	}
	if st.AdminPolicies, err = c.admin.AdminNetworkPolicies.Lister().List(labels.Everything()); err != nil {
		return nil, err
	}
	if st.Baseline, err = c.admin.BaselineAdminNetworkPolicies.Lister().Get(BaselineName); apierrors.IsNotFound(err) {
		st.Baseline, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	st.Nodes, err = c.admin.Nodes.Lister().List(labels.Everything())
	return st, err
}

// hasIPVS tells whether the kernel has IPVS loaded (miniproxy's IPVS mode loads it), in
// the controller's network namespace: then OutputChain decides what IPVS translated.
func (c *Controller) hasIPVS() bool {
	var err error
	_ = c.inNetNS(func() error {
		// thread-self: inNetNS moved this thread alone.
		_, err = os.Stat("/proc/thread-self/net/ip_vs")
		return nil
	})
	return err == nil
}

func (c *Controller) inNetNS(fn func() error) error {
	if c.NetNS == "" {
		return fn()
	}
	return network.InNetNS(c.NetNS, fn)
}

// write syncs the sets (creating new ones), then the rules in one iptables-restore when
// they changed, then destroys the sets no rule uses any more.
func (c *Controller) write(ctx context.Context, rs *Ruleset) (SyncResult, error) {
	res := SyncResult{Chains: len(rs.Chains), Sets: len(rs.Sets)}
	if c.chains == nil {
		if err := c.readKernel(ctx); err != nil {
			return res, err
		}
	}
	n, err := c.sets.Sync(ctx, rs.Sets)
	if err != nil {
		return res, err
	}
	res.SetLines = n
	wantChains := map[string]bool{}
	for _, ch := range rs.Chains {
		wantChains[ch.Name] = true
	}
	var stale []string
	for ch := range c.chains {
		if !wantChains[ch] {
			stale = append(stale, ch)
		}
	}
	if input := rs.Restore(nil); input != c.written || len(stale) > 0 {
		if err := restore(ctx, rs.Restore(stale)); err != nil {
			c.written, c.chains = "", nil
			c.sets.Reset()
			return res, err
		}
		c.written, c.chains, res.RulesWritten = input, wantChains, true
	}
	if err := ensureJumps(); err != nil {
		c.written = ""
		return res, err
	}
	wantSets := map[string]bool{}
	for _, s := range rs.Sets {
		wantSets[s.Name] = true
	}
	var staleSets []string
	for s := range c.setsNow {
		if !wantSets[s] {
			staleSets = append(staleSets, s)
		}
	}
	if len(staleSets) > 0 {
		// (Destroy reads every set first: not for nothing.)
		if err := ipset.Destroy(ctx, staleSets...); err != nil {
			return res, err
		}
	}
	c.setsNow = wantSets
	return res, nil
}

// readKernel learns which chains and sets of ours exist (left by an earlier run).
func (c *Controller) readKernel(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "iptables-save", "-t", "filter").Output()
	if err != nil {
		return fmt.Errorf("iptables-save -t filter: %w", err)
	}
	c.chains = map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, ":"); ok {
			if name = strings.Fields(name)[0]; name == TopChain || name == InputChain || name == OutputChain || strings.HasPrefix(name, chainPrefix) {
				c.chains[name] = true
			}
		}
	}
	sets, err := ipset.Save(ctx)
	if err != nil {
		return err
	}
	c.setsNow = map[string]bool{}
	for name := range sets {
		if strings.HasPrefix(name, setPrefix) {
			c.setsNow[name] = true
		}
	}
	return nil
}

func restore(ctx context.Context, input string) error {
	cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5", "--noflush")
	cmd.Stdin = strings.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("iptables-restore: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// jumps are our chains' jumps from the built-in ones, each first there (moved back there
// when a service proxy or firewall inserted above it, as kube-router keeps its own): our
// chains only drop or return, so what follows still decides the rest, and no ACCEPT above
// them lets a new connection skip the policies. FORWARD carries pod to pod and pod to
// outside, INPUT a pod to its own node (after any DNAT: a node port or a Service whose
// endpoint is the node is decided on the endpoint's address), OUTPUT what IPVS translated.
var jumps = []jump{
	{"FORWARD", TopChain, "minik8s network policies"},
	{"INPUT", InputChain, "minik8s network policies: pods to their node"},
	{"OUTPUT", OutputChain, "minik8s network policies: after IPVS"},
}

type jump struct{ from, to, comment string }

func (j jump) rule() []string { return []string{"-m", "comment", "--comment", j.comment, "-j", j.to} }

func ensureJumps() error {
	ipt, err := goipt.NewWithProtocol(goipt.ProtocolIPv4)
	if err != nil {
		return err
	}
	for _, j := range jumps {
		rules, err := ipt.List("filter", j.from)
		if err != nil {
			return fmt.Errorf("iptables: %w", err)
		}
		// rules[0] is the chain's policy (-P FORWARD ACCEPT).
		if len(rules) > 1 && strings.HasSuffix(rules[1], "-j "+j.to) {
			continue
		}
		if err := ipt.DeleteIfExists("filter", j.from, j.rule()...); err != nil {
			return fmt.Errorf("iptables: %w", err)
		}
		if err := ipt.Insert("filter", j.from, 1, j.rule()...); err != nil {
			return fmt.Errorf("jump from filter/%s to %s: %w", j.from, j.to, err)
		}
	}
	return nil
}

// Cleanup removes the jumps, every chain and every set of ours (in the current namespace).
func Cleanup(ctx context.Context) error {
	ipt, err := goipt.NewWithProtocol(goipt.ProtocolIPv4)
	if err != nil {
		return err
	}
	for _, j := range jumps {
		if err := ipt.DeleteIfExists("filter", j.from, j.rule()...); err != nil {
			return err
		}
	}
	c := &Controller{}
	if err := c.readKernel(ctx); err != nil {
		return err
	}
	stale := slices.Collect(maps.Keys(c.chains))
	if len(stale) > 0 {
		if err := restore(ctx, (&Ruleset{}).Restore(stale)); err != nil {
			return err
		}
	}
	return ipset.Destroy(ctx, slices.Collect(maps.Keys(c.setsNow))...)
}
