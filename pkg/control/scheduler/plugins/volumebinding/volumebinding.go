// Package volumebinding is kube-scheduler's VolumeBinding plugin, for the PV controller
// and provisioners to bind: a pod whose PersistentVolumeClaim is missing or being deleted
// waits; a bound claim's volume node affinity limits the nodes; an unbound claim of an
// Immediate class waits for the PV controller; an unbound claim of a WaitForFirstConsumer
// class fits a node where a volume can be provisioned (the class's allowedTopologies) or,
// without a provisioner, where an available volume matches it. Once a node is chosen,
// PreBind writes it on such claims (volume.kubernetes.io/selected-node), where the
// provisioner or the PV controller picks it up, and waits for them to be bound before the
// pod is.
package volumebinding

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Name is the plugin's name in profiles.
const Name = "VolumeBinding"

// kube-scheduler's wording.
const (
	ErrReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
	ErrReasonNodeConflict     = "node(s) had volume node affinity conflict"
	ErrReasonBindConflict     = "node(s) didn't find available persistent volumes to bind"
	ErrReasonTopology         = "node(s) didn't match the storage class's allowed topologies"
)

// bindTimeout bounds PreBind's wait for the claims to be bound (kube-scheduler's
// --bind-timeout-seconds is 600; a pod that times out is retried, the claim keeps its node).
const bindTimeout = 2 * time.Minute

const stateKey = Name + "/preFilter"

// Plugin is the filter and pre-binder.
type Plugin struct {
	client  kubernetes.Interface
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
}

// New makes the plugin.
func New(h framework.Handle) (framework.Plugin, error) {
	f := h.Informers().Core().V1()
	return &Plugin{client: h.Client(), claims: f.PersistentVolumeClaims().Lister(), volumes: f.PersistentVolumes().Lister(),
		classes: h.Informers().Storage().V1().StorageClasses().Lister()}, nil
}

func (*Plugin) Name() string { return Name }

// state is what PreFilter learnt: the bound volumes' node affinity and the claims that
// wait for this pod's node.
type state struct {
	selectors []*nodeaffinity.NodeSelector
	delayed   []delayedClaim
}

type delayedClaim struct {
	claim *corev1.PersistentVolumeClaim
	class *storagev1.StorageClass
}

// PreFilter checks every claim exists and is bound or waits for its first consumer;
// Skip when the pod has no claims.
func (p *Plugin) PreFilter(_ context.Context, cs *framework.CycleState, pod *framework.PodInfo, _ framework.NodeLister) *framework.Status {
	var st state
	hasClaims := false
	for i, v := range pod.Pod.Spec.Volumes {
		name := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			name = ephemeral.VolumeClaimName(pod.Pod, &pod.Pod.Spec.Volumes[i])
		default:
			continue
		}
		hasClaims = true
		pvc, err := p.claims.PersistentVolumeClaims(pod.Pod.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		}
		if err != nil {
			return framework.AsStatus(err)
		}
		if pvc.DeletionTimestamp != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if pvc.Spec.VolumeName == "" {
			sc, err := p.classes.Get(storagehelpers.GetPersistentVolumeClaimClass(pvc))
			if err != nil || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
			}
			st.delayed = append(st.delayed, delayedClaim{claim: pvc, class: sc})
			continue
		}
		pv, err := p.volumes.Get(pvc.Spec.VolumeName)
		if err != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolume %q not found", pvc.Spec.VolumeName))
		}
		if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
			sel, err := nodeaffinity.NewNodeSelector(pv.Spec.NodeAffinity.Required)
			if err != nil {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolume %q node affinity: %v", pv.Name, err))
			}
			st.selectors = append(st.selectors, sel)
		}
	}
	if !hasClaims || (len(st.selectors) == 0 && len(st.delayed) == 0) {
		return framework.NewStatus(framework.Skip)
	}
	cs.Write(stateKey, &st)
	return nil
}

func (p *Plugin) Filter(_ context.Context, cs *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	st, _ := framework.ReadAs[*state](cs, stateKey)
	if st == nil {
		return nil
	}
	node := n.Node()
	for _, s := range st.selectors {
		if !s.Match(node) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeConflict)
		}
	}
	if len(st.delayed) == 0 {
		return nil
	}
	volumes, err := p.volumes.List(labels.Everything())
	if err != nil {
		return framework.AsStatus(err)
	}
	chosen := map[string]*corev1.PersistentVolume{}
	for _, d := range st.delayed {
		pv, err := storagehelpers.FindMatchingVolume(d.claim, volumes, node, chosen, true, false)
		if err != nil {
			return framework.AsStatus(err)
		}
		if pv != nil {
			chosen[pv.Name] = pv
			continue
		}
		if d.class.Provisioner == storagehelpers.NotSupportedProvisioner {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonBindConflict)
		}
		if !allowedTopology(d.class, node) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonTopology)
		}
	}
	return nil
}

// allowedTopology tells whether a class may provision on node: any of its terms matches
// (no terms: anywhere).
func allowedTopology(sc *storagev1.StorageClass, node *corev1.Node) bool {
	if len(sc.AllowedTopologies) == 0 {
		return true
	}
	for _, term := range sc.AllowedTopologies {
		match := true
		for _, e := range term.MatchLabelExpressions {
			v, ok := node.Labels[e.Key]
			if !ok || !slices.Contains(e.Values, v) {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// PreBind writes the chosen node on the claims waiting for it and waits until the PV
// controller (or a provisioner) has bound them all.
func (p *Plugin) PreBind(ctx context.Context, cs *framework.CycleState, pod *framework.PodInfo, node string) *framework.Status {
	st, _ := framework.ReadAs[*state](cs, stateKey)
	if st == nil || len(st.delayed) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	for _, d := range st.delayed {
		pvc, err := p.client.CoreV1().PersistentVolumeClaims(d.claim.Namespace).Get(ctx, d.claim.Name, metav1.GetOptions{})
		if err != nil {
			return framework.AsStatus(err)
		}
		if pvc.Spec.VolumeName != "" || pvc.Annotations[storagehelpers.AnnSelectedNode] == node {
			continue
		}
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[storagehelpers.AnnSelectedNode] = node
		if _, err := p.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return framework.AsStatus(fmt.Errorf("select node %s for claim %s/%s: %w", node, pvc.Namespace, pvc.Name, err))
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, bindTimeout, true, func(context.Context) (bool, error) {
		for _, d := range st.delayed {
			pvc, err := p.claims.PersistentVolumeClaims(d.claim.Namespace).Get(d.claim.Name)
			if err != nil {
				return false, err
			}
			if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return framework.AsStatus(fmt.Errorf("binding volumes: %w", err))
	}
	return nil
}

func (*Plugin) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Kind: framework.KindPersistentVolumeClaim, Action: framework.Add | framework.Update},
		{Kind: framework.KindPersistentVolume, Action: framework.Add | framework.Update},
		{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeLabel},
	}
}
