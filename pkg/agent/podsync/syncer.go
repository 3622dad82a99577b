// Package podsync is minilet's pod runtime sync, the kubelet's kuberuntime: it makes
// one pod's sandbox, network, volumes and containers (init, app, ephemeral, with their
// hooks and probes) match its spec, reports its status, and tears it all down
// (SyncPod, TerminatePod). The agent's pod workers call it, one pod at a time.
package podsync

import (
	"log/slog"

	corev1 "k8s.io/api/core/v1"
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

// Config is what the syncer needs of the node and its dependencies.
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

	Client   kubernetes.Interface
	Recorder record.EventRecorder
	Runtime  Runtime
	Network  Network
	Clock    clock.WithTicker
	Log      *slog.Logger
	Volumes  *volumes.Manager
	Statuses *status.Writer
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
	probes   *prober.Manager // nil: no probes (tests)

	oomFloor    int // the lowest oom_score_adj containers may get here
	capacity    corev1.ResourceList
	allocatable corev1.ResourceList // capacity less --system-reserved and --kube-reserved

	endings endings // pods asked to end (End), for their workers
}

// New makes a syncer on cfg's dependencies.
func New(cfg Config) *Syncer {
	return &Syncer{
		cfg: cfg, client: cfg.Client, rt: cfg.Runtime, net: cfg.Network, recorder: cfg.Recorder,
		clock: cfg.Clock, log: cfg.Log, backoff: newBackoff(cfg.Clock), volumes: cfg.Volumes, statuses: cfg.Statuses,
		images: images.New(images.Config{Runtime: cfg.Runtime, Secrets: cfg.Client.CoreV1(), Recorder: cfg.Recorder,
			InsecureRegistries: cfg.InsecureRegistries, Backoff: newBackoff(cfg.Clock), Clock: cfg.Clock, Log: cfg.Log}),
		hostNet: hostnetwork.New(cfg.Network, cfg.RootDir, cfg.Log),
	}
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

// SetResources tells the syncer the node's OOM score floor, capacity and allocatable,
// which the agent measures when it starts, before any pod is synced.
func (s *Syncer) SetResources(oomFloor int, capacity, allocatable corev1.ResourceList) {
	s.oomFloor, s.capacity, s.allocatable = oomFloor, capacity, allocatable
}

// SetProbes gives the syncer the prober manager, which is built on the syncer (it runs
// exec probes and kills containers through it), before any pod is synced.
func (s *Syncer) SetProbes(p *prober.Manager) { s.probes = p }

// ForgetExpiredBackoffs drops crash-loop and pull back-offs that have expired (housekeeping).
func (s *Syncer) ForgetExpiredBackoffs() {
	s.backoff.GC()
	s.images.ForgetExpiredBackoffs()
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
