// Package podsync is minilet's pod runtime sync, the kubelet's kuberuntime: it makes
// one pod's sandbox, network, volumes and containers (init, app, ephemeral, with their
// hooks and probes) match its spec, reports its status, and tears it all down
// (SyncPod, TerminatePod). The agent's pod workers call it, one pod at a time.
package podsync

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/agent/dns"
	"github.com/minik8s/minik8s/pkg/agent/hostnetwork"
	"github.com/minik8s/minik8s/pkg/agent/images"
	"github.com/minik8s/minik8s/pkg/agent/prober"
	"github.com/minik8s/minik8s/pkg/agent/starttrace"
	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
)

// Config is what the syncer needs of the node.
type Config struct {
	NodeName           string
	NodeIP             string // the pods' hostIP
	CgroupRoot         string // pods' cgroups go below it
	InsecureRegistries []string
	PodMaxPids         int64 // per pod; <= 0 is no limit
	// RootDir holds the node namespace's bind mount (pkg/agent/hostnetwork); the directories
	// below it are minilet's layout (docs/contracts.md).
	RootDir, PodsDir, LogsDir, NetNSDir, SeccompDir string
	DNS                                             *dns.Configurer // the pods' resolv.conf and hosts

	OOMFloor    int // the lowest oom_score_adj containers may get here (cm.ProtectSelf)
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList // capacity less --system-reserved and --kube-reserved
}

// Deps are the things the syncer drives, as the kubelet's Dependencies: the agent
// builds them, tests build fakes.
type Deps struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
	Runtime  Runtime
	Network  Network
	Clock    clock.WithTicker
	Log      *slog.Logger
	Volumes  *volumes.Manager
	Statuses *status.Writer
	// ObserveProbe records how each probe went (metrics); Wake asks for a pod to be
	// synced again (the pod workers), when a probe changes its status.
	ObserveProbe prober.Observer
	Wake         func(types.UID)
	// Fits decides whether a resize is granted (allocation.go); nil grants every one.
	Fits Fits
	// Services are read for containers' variables (serviceEnv).
	Services Services
}

// Syncer runs pods on the node's runtime and network.
type Syncer struct {
	cfg      Config
	client   kubernetes.Interface
	rt       Runtime
	net      Network
	recorder record.EventRecorder
	clock    clock.WithTicker
	log      *slog.Logger
	backoff  *flowcontrol.Backoff // crash loops
	images   *images.Manager
	hostNet  *hostnetwork.Node // the node's network namespace, which hostNetwork pods join
	volumes  *volumes.Manager
	statuses *status.Writer
	services Services
	// probes are the prober manager, built on the syncer: it runs exec probes in the
	// pods' containers and kills those that fail liveness (probetargets.go).
	probes *prober.Manager

	endings   endings      // pods asked to end (End), for their workers
	stopping  stoppingPods // deleted pods whose containers stop, for their readiness (stopready.go)
	allocated allocations  // the resources granted each pod (allocation.go)
	fits      Fits
}

// New makes a syncer for the node cfg describes on deps.
func New(cfg Config, deps Deps) *Syncer {
	s := &Syncer{
		cfg: cfg, client: deps.Client, rt: deps.Runtime, net: deps.Network, recorder: deps.Recorder,
		clock: deps.Clock, log: deps.Log, backoff: newBackoff(deps.Clock), volumes: deps.Volumes, statuses: deps.Statuses,
		services: deps.Services,
		images: images.New(images.Config{Runtime: deps.Runtime, Secrets: deps.Client.CoreV1(), Recorder: deps.Recorder,
			InsecureRegistries: cfg.InsecureRegistries, Backoff: newBackoff(deps.Clock), Clock: deps.Clock, Log: deps.Log}),
		hostNet: hostnetwork.New(deps.Network, cfg.RootDir, deps.Log), fits: deps.Fits,
	}
	wake := func(uid types.UID) {
		s.stopping.probeChanged(uid)
		deps.Wake(uid)
	}
	s.probes = prober.New(prober.Config{Containers: s, Events: s, Observe: deps.ObserveProbe, Wake: wake, Clock: deps.Clock})
	return s
}

// newBackoff is the kubelet's back-off of crash loops and of failed pulls alike:
// 10 s doubling to 5 min.
func newBackoff(clk clock.Clock) *flowcontrol.Backoff {
	b := flowcontrol.NewBackOff(backoffInitial, backoffMax)
	b.Clock = clk
	return b
}

// BindNodeNetNS binds minilet's network namespace where hostNetwork pods join it, at
// every start before any pod is synced (hostnetwork.Node.Bind).
func (s *Syncer) BindNodeNetNS() error { return s.hostNet.Bind() }

// NetworkReady is nil once pods can be set up, else the runtime's NetworkReady=false
// condition as the kubelet reports it (node Ready's message, the NetworkNotReady event),
// in containerd's CRI's words.
func (s *Syncer) NetworkReady() error {
	if err := s.net.Ready(); err != nil {
		return fmt.Errorf("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: %w", err)
	}
	return nil
}

// RunProbes runs the probe workers the syncs start until ctx ends, then stops them all.
func (s *Syncer) RunProbes(ctx context.Context) { s.probes.Run(ctx) }

// ForgetExpiredBackoffs drops crash-loop, pull and volume set-up back-offs that have
// expired (housekeeping).
func (s *Syncer) ForgetExpiredBackoffs() {
	s.backoff.GC()
	s.images.ForgetExpiredBackoffs()
	s.volumes.ForgetExpiredRetries()
}

// NewPodState is the state a pod's worker keeps, from the pod's last reported status;
// a new pod (not one adopted after a restart) gets its start timed.
func (s *Syncer) NewPodState(pod *corev1.Pod) *PodState {
	now := s.clock.Now()
	st := newPodState(pod, apiTime(now))
	if pod.Status.StartTime == nil {
		st.trace = starttrace.New(now)
	}
	return st
}
