package nodestatus

import (
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/apimachinery/lease"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/nodefeatures"
	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/minik8s/minik8s/pkg/stats"
)

// statusPeriod is how often the kubelet posts node status (--node-status-update-frequency).
const statusPeriod = 10 * time.Second

// Node lease timing as the kubelet's: a 40 s lease renewed every quarter of it.
const (
	leaseDurationSeconds = 40
	leaseRenewInterval   = leaseDurationSeconds * time.Second / 4
)

// controllerManagedAttachAnnotation is the kubelet's volutil.ControllerManagedAttachAnnotation.
const controllerManagedAttachAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"

// apiTimeout bounds a single API request made outside a caller's context.
const apiTimeout = 10 * time.Second

// Node is what minilet registers of its node.
type Node struct {
	Name, IP, PodCIDR string
	// APIPort is where miniapi finds the node API (status.daemonEndpoints); 0 when
	// the node does not serve it.
	APIPort int
}

// Config is what the manager reports and where it gets it.
type Config struct {
	Node   Node
	Client kubernetes.Interface
	Clock  clock.Clock
	Log    *slog.Logger
	// Runtime is the container runtime's version, or why the node cannot run pods.
	Runtime func(ctx context.Context) (string, error)
	// Images lists the runtime's images for status.images (nil: none listed).
	Images                func(ctx context.Context) ([]runtime.Image, error)
	Capacity, Allocatable corev1.ResourceList
	// Stats is the latest usage sample (nil: none) that Pressure (nil: none) holds
	// against the eviction thresholds (shared with the eviction manager).
	Stats    interface{ Latest() *stats.Snapshot }
	Pressure *stats.Pressure
	// Event records an event on the node (nil: none); the manager tells of each condition
	// it changes and each change of the node's schedulability, as the kubelet does.
	Event func(eventType, reason, message string)
}

// Manager is the kubelet's node status side: it registers the Node, posts its status
// (addresses, capacity, nodeInfo, Ready and the pressure conditions) and renews its Lease.
type Manager struct {
	cfg Config
	// unschedulable is the node's spec.unschedulable at the last status posted, as the
	// kubelet's lastNodeUnschedulable: a node starts schedulable, untold.
	unschedulable bool
}

// New makes the manager of the node cfg describes.
func New(cfg Config) *Manager { return &Manager{cfg: cfg} }

// Register creates this node's Node object, or brings an existing one in line with the
// flags, retrying until it succeeds or ctx ends.
func (m *Manager) Register(ctx context.Context) error {
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 7 * time.Second, Steps: 1 << 30}
	for {
		err := m.ensureNode(ctx)
		if err == nil {
			m.cfg.Log.Info("node registered", "node", m.cfg.Node.Name)
			return nil
		}
		m.cfg.Log.Error("register node, will retry", "node", m.cfg.Node.Name, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("register node %s: %w", m.cfg.Node.Name, err)
		case <-time.After(backoff.Step()):
		}
	}
}

func (m *Manager) ensureNode(ctx context.Context) error {
	nodes := m.cfg.Client.CoreV1().Nodes()
	want := m.desiredNode()
	_, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if existing.Spec.PodCIDR != "" && existing.Spec.PodCIDR != want.Spec.PodCIDR {
		return fmt.Errorf("node %s already has podCIDR %s, but --pod-cidr is %s", want.Name, existing.Spec.PodCIDR, want.Spec.PodCIDR)
	}
	updated := existing.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		updated.Labels[k] = v
	}
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	for k, v := range want.Annotations {
		updated.Annotations[k] = v
	}
	updated.Spec.PodCIDR, updated.Spec.PodCIDRs = want.Spec.PodCIDR, want.Spec.PodCIDRs
	if apiequality.Semantic.DeepEqual(existing.ObjectMeta, updated.ObjectMeta) && apiequality.Semantic.DeepEqual(existing.Spec, updated.Spec) {
		return nil
	}
	_, err = nodes.Update(ctx, updated, metav1.UpdateOptions{})
	return err
}

// images is the node's status.images; none when the runtime cannot list them (logged), as
// the kubelet's Images setter leaves it.
func (m *Manager) images(ctx context.Context) []corev1.ContainerImage {
	if m.cfg.Images == nil {
		return nil
	}
	imgs, err := m.cfg.Images(ctx)
	if err != nil {
		m.cfg.Log.Error("error getting image list", "node", m.cfg.Node.Name, "err", err)
		return nil
	}
	return containerImages(imgs)
}

// desiredNode is the Node object as minilet registers it; its status is filled by the
// first heartbeat.
func (m *Manager) desiredNode() *corev1.Node {
	n := m.cfg.Node
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name,
			// The kubelet's initialNode: the stable labels and, still, the beta ones.
			Labels: map[string]string{
				corev1.LabelHostname:   n.Name,
				corev1.LabelOSStable:   goruntime.GOOS,
				corev1.LabelArchStable: goruntime.GOARCH,
				kubeletapis.LabelOS:    goruntime.GOOS,
				kubeletapis.LabelArch:  goruntime.GOARCH,
			},
			// As the kubelet with --enable-controller-attach-detach (its default): the
			// node attaches no volume itself.
			Annotations: map[string]string{controllerManagedAttachAnnotation: "true"},
		},
		Spec: corev1.NodeSpec{PodCIDR: n.PodCIDR, PodCIDRs: []string{n.PodCIDR}},
	}
}

// UpdateStatus posts the node's addresses, capacity, nodeInfo, declared features and
// conditions with a fresh heartbeat. A node deleted behind our back stays deleted, its
// status posts failing, until minilet restarts and registers it: the kubelet registers once.
func (m *Manager) UpdateStatus(ctx context.Context) error {
	runtimeVersion, runtimeErr := m.cfg.Runtime(ctx)
	images := m.images(ctx)
	nodes := m.cfg.Client.CoreV1().Nodes()
	name := m.cfg.Node.Name
	var changes []string
	var unschedulable bool
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("error getting node %q: %w", name, err) // the kubelet's words
		}
		changes = m.setStatus(&node.Status, runtimeVersion, runtimeErr)
		node.Status.Images = images
		unschedulable = node.Spec.Unschedulable
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	if unschedulable != m.unschedulable {
		m.unschedulable = unschedulable
		if unschedulable {
			changes = append(changes, "NodeNotSchedulable")
		} else {
			changes = append(changes, "NodeSchedulable")
		}
	}
	m.tell(changes)
	return nil
}

// tell records the kubelet's event for each change of the node's status: its reason and
// "Node node-1 status is now: NodeReady" (the kubelet's recordNodeStatusEvent).
func (m *Manager) tell(changes []string) {
	if m.cfg.Event == nil {
		return
	}
	for _, reason := range changes {
		m.cfg.Event(corev1.EventTypeNormal, reason, fmt.Sprintf("Node %s status is now: %s", m.cfg.Node.Name, reason))
	}
}

// setStatus fills status and returns the event reasons of the conditions it changed.
func (m *Manager) setStatus(status *corev1.NodeStatus, runtimeVersion string, runtimeErr error) (changes []string) {
	now := metav1.NewTime(m.cfg.Clock.Now()).Rfc3339Copy()
	status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: m.cfg.Node.IP},
		{Type: corev1.NodeHostName, Address: m.cfg.Node.Name},
	}
	if m.cfg.Node.APIPort != 0 {
		status.DaemonEndpoints.KubeletEndpoint.Port = int32(m.cfg.Node.APIPort)
	}
	m.setResources(status)
	info := HostNodeInfo(runtimeVersion)
	if runtimeVersion == "" { // keep the last known version while the runtime is down
		info.ContainerRuntimeVersion = status.NodeInfo.ContainerRuntimeVersion
	}
	status.NodeInfo = info
	status.RuntimeHandlers = runtimeHandlers()
	status.DeclaredFeatures = nodefeatures.Declared()
	changes = m.setPressureConditions(status, now)
	if runtimeErr != nil {
		if setCondition(status, now, corev1.NodeReady, corev1.ConditionFalse, "KubeletNotReady", runtimeErr.Error()) {
			changes = append(changes, "NodeNotReady")
		}
	} else if setCondition(status, now, corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status") {
		changes = append(changes, "NodeReady")
	}
	return changes
}

// runtimeHandlers are the node's runtime handlers as the kubelet's RuntimeHandlers setter
// reports them: minilet runs every pod on the default one (""), which has neither recursive
// read-only mounts (volumes.ContainerMounts refuses a mount that needs one) nor user
// namespaces.
func runtimeHandlers() []corev1.NodeRuntimeHandler {
	return []corev1.NodeRuntimeHandler{{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{
		RecursiveReadOnlyMounts: ptr.To(false), UserNamespaces: ptr.To(false),
	}}}
}

// setResources posts our capacity and allocatable and keeps what others added, as the
// kubelet's MachineInfo setter: an extended resource patched into the node's capacity (by
// a device operator, or a test) stays, and is allocatable in full.
func (m *Manager) setResources(status *corev1.NodeStatus) {
	capacity := corev1.ResourceList{}
	for name, q := range status.Capacity {
		capacity[name] = q
	}
	for name, q := range m.cfg.Capacity {
		capacity[name] = q
	}
	allocatable := corev1.ResourceList{}
	for name, q := range capacity {
		if ours, ok := m.cfg.Allocatable[name]; ok {
			q = ours
		}
		allocatable[name] = q
	}
	status.Capacity, status.Allocatable = capacity, allocatable
}

// pressureConditions are the kubelet's words for each pressure condition, off and on:
// the condition's reason and message, and the event telling of the change.
var pressureConditions = []struct {
	cond                            stats.Condition
	typ                             corev1.NodeConditionType
	offReason, offMessage, offEvent string
	onReason, onMessage, onEvent    string
}{
	{stats.MemoryPressure, corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available", "NodeHasSufficientMemory", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available", "NodeHasInsufficientMemory"},
	{stats.DiskPressure, corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure", "KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure"},
	{stats.PIDPressure, corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available", "NodeHasSufficientPID", "KubeletHasInsufficientPID", "kubelet has insufficient PID available", "NodeHasInsufficientPID"},
}

// setPressureConditions sets MemoryPressure, DiskPressure and PIDPressure from the latest
// usage sample against the hard and soft eviction thresholds, as the kubelet's eviction manager decides them
// (the eviction manager, pkg/agent/eviction, acts on the same thresholds). It returns the
// event reasons of the conditions it changed.
func (m *Manager) setPressureConditions(status *corev1.NodeStatus, now metav1.Time) (changes []string) {
	pressure := m.cfg.Pressure
	if m.cfg.Stats != nil && pressure != nil {
		if snap := m.cfg.Stats.Latest(); snap != nil {
			pressure.Observe(&snap.Summary, now.Time)
		}
	}
	for _, p := range pressureConditions {
		var under bool
		var crossed []string
		if pressure != nil {
			under, crossed = pressure.Under(p.cond, m.cfg.Clock.Now())
		}
		if under {
			msg := p.onMessage
			if len(crossed) > 0 {
				msg += " (" + strings.Join(crossed, "; ") + ")"
			}
			if setCondition(status, now, p.typ, corev1.ConditionTrue, p.onReason, msg) {
				changes = append(changes, p.onEvent)
			}
		} else if setCondition(status, now, p.typ, corev1.ConditionFalse, p.offReason, p.offMessage) {
			changes = append(changes, p.offEvent)
		}
	}
	return changes
}

// setCondition refreshes a condition's heartbeat; its transition time moves only when its
// status changes (or the condition is new), and then it reports true.
func setCondition(status *corev1.NodeStatus, now metav1.Time, typ corev1.NodeConditionType, value corev1.ConditionStatus, reason, message string) (changed bool) {
	cond := corev1.NodeCondition{Type: typ, Status: value, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
	for i, old := range status.Conditions {
		if old.Type != typ {
			continue
		}
		if old.Status == value {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		status.Conditions[i] = cond
		return old.Status != value
	}
	status.Conditions = append(status.Conditions, cond)
	return true
}

// RunStatus posts node status every statusPeriod until ctx ends.
func (m *Manager) RunStatus(ctx context.Context) {
	tick := time.NewTicker(statusPeriod)
	defer tick.Stop()
	for {
		if err := m.UpdateStatus(ctx); err != nil && ctx.Err() == nil {
			m.cfg.Log.Error("update node status", "node", m.cfg.Node.Name, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RunLease renews the node's Lease in kube-node-lease until ctx ends, with the kubelet's
// own controller.
func (m *Manager) RunLease(ctx context.Context) {
	name := m.cfg.Node.Name
	ctl := lease.NewController(m.cfg.Clock, m.cfg.Client, name, leaseDurationSeconds,
		func() { m.cfg.Log.Warn("node lease renewal keeps failing", "node", name) },
		leaseRenewInterval, name, corev1.NamespaceNodeLease, m.setLeaseOwner)
	ctl.Run(ctx)
}

// setLeaseOwner makes the Node own its Lease, so deleting the node deletes the lease (the
// kubelet does the same).
func (m *Manager) setLeaseOwner(l *coordinationv1.Lease) error {
	if len(l.OwnerReferences) > 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	node, err := m.cfg.Client.CoreV1().Nodes().Get(ctx, m.cfg.Node.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s to own its lease: %w", m.cfg.Node.Name, err)
	}
	l.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: corev1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
	}}
	return nil
}
