// Package defaultpreemption is kube-scheduler's DefaultPreemption PostFilter: when a pod
// fits nowhere, find nodes where evicting lower-priority pods would make it fit, keep as
// few victims as possible (those whose eviction would violate a PodDisruptionBudget are
// reprieved first), pick the node with the fewest PDB violations, then the lowest
// highest-priority victim, then the lowest sum of victim priorities, then the fewest
// victims; delete the victims gracefully and nominate the node.
package defaultpreemption

import (
	"context"
	"fmt"
	"iter"
	"math"
	"sort"
	"strings"

	"github.com/minik8s/minik8s/internal/controller/disruption"
	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	policylisters "k8s.io/client-go/listers/policy/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Name is the plugin's name in profiles.
const Name = "DefaultPreemption"

// kube-scheduler's wording.
const (
	ReasonNoVictims  = "No preemption victims found for incoming pod"
	ReasonNotHelpful = "Preemption is not helpful for scheduling"
)

// Plugin is the PostFilter.
type Plugin struct {
	h      framework.Handle
	client kubernetes.Interface
	pdbs   policylisters.PodDisruptionBudgetLister
	// OnPreempt, when set, is told of each victim (the scheduler emits its Event).
	OnPreempt func(victim, preemptor *corev1.Pod, node string)
}

// New makes the plugin.
func New(h framework.Handle) (framework.Plugin, error) {
	return &Plugin{h: h, client: h.Client(), pdbs: h.Informers().Policy().V1().PodDisruptionBudgets().Lister()}, nil
}

func (*Plugin) Name() string { return Name }

type candidate struct {
	node          string
	victims       []*corev1.Pod
	pdbViolations int
}

// PostFilter preempts, returning the nominated node.
func (p *Plugin) PostFilter(ctx context.Context, _ *framework.CycleState, pod *framework.PodInfo, statuses framework.NodeStatuses) (string, *framework.Status) {
	if pod.Pod.Spec.PreemptionPolicy != nil && *pod.Pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return "", framework.NewStatus(framework.Unschedulable, "preemption: not eligible due to preemptionPolicy=Never.")
	}
	nodes := p.h.Nodes()
	if n := nodes.Get(pod.Pod.Status.NominatedNodeName); n != nil {
		// An earlier preemption's victims are still leaving: wait for them.
		prio := corev1helpers.PodPriority(pod.Pod)
		for _, pi := range n.Pods {
			if pi.Pod.DeletionTimestamp != nil && corev1helpers.PodPriority(pi.Pod) < prio {
				return "", framework.NewStatus(framework.Unschedulable, "preemption: not eligible due to a terminating pod on the nominated node.")
			}
		}
	}
	all := nodes.List()
	reasons := framework.NodeStatuses{}
	var potential []*framework.NodeInfo
	for _, n := range all {
		if s, rejected := statuses[n.Node().Name]; rejected && s.Code() == framework.UnschedulableAndUnresolvable {
			reasons[n.Node().Name] = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNotHelpful)
			continue
		}
		potential = append(potential, n)
	}
	pdbs, err := p.pdbs.List(labels.Everything())
	if err != nil {
		return "", framework.AsStatus(err)
	}
	var candidates []candidate
	for _, n := range potential {
		c, ok := p.victimsOn(ctx, pod, n, nodes, pdbs)
		if !ok {
			reasons[n.Node().Name] = framework.NewStatus(framework.Unschedulable, ReasonNoVictims)
			continue
		}
		candidates = append(candidates, c)
	}
	if len(candidates) == 0 {
		return "", framework.NewStatus(framework.Unschedulable,
			fmt.Sprintf("preemption: 0/%d nodes are available: %s.", len(all), framework.ReasonHistogram(reasons)))
	}
	best := pick(candidates)
	for _, v := range best.victims {
		if err := p.markDisruptionTarget(ctx, v, pod.Pod); err != nil {
			if apierrors.IsNotFound(err) {
				continue // gone already
			}
			return "", framework.AsStatus(fmt.Errorf("preempt %s/%s: %w", v.Namespace, v.Name, err))
		}
		err := p.client.CoreV1().Pods(v.Namespace).Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &v.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", framework.AsStatus(fmt.Errorf("preempt %s/%s: %w", v.Namespace, v.Name, err))
		}
		if p.OnPreempt != nil {
			p.OnPreempt(v, pod.Pod, best.node)
		}
	}
	return best.node, nil
}

// markDisruptionTarget tells the victim why it goes before it is deleted, as
// kube-scheduler's preemption executor: a DisruptionTarget condition, reason
// PreemptionByScheduler.
func (p *Plugin) markDisruptionTarget(ctx context.Context, victim, preemptor *corev1.Pod) error {
	scheduler := preemptor.Spec.SchedulerName
	if scheduler == "" {
		scheduler = corev1.DefaultSchedulerName
	}
	return disruption.Mark(ctx, p.client, victim, corev1.PodReasonPreemptionByScheduler, scheduler+": preempting to accommodate a higher priority pod")
}

// victimsOn finds the fewest lower-priority pods on n whose eviction lets pod fit.
func (p *Plugin) victimsOn(ctx context.Context, pod *framework.PodInfo, n *framework.NodeInfo, nodes framework.NodeLister, pdbs []*policyv1.PodDisruptionBudget) (candidate, bool) {
	prio := corev1helpers.PodPriority(pod.Pod)
	trial := n.Clone()
	var lower []*framework.PodInfo
	for _, pi := range n.Pods {
		if corev1helpers.PodPriority(pi.Pod) < prio {
			lower = append(lower, pi)
			trial.RemovePod(pi.Pod)
		}
	}
	if len(lower) == 0 {
		return candidate{}, false
	}
	what := overlay{NodeLister: nodes, node: trial}
	if !p.h.RunFilters(ctx, pod, what, trial).IsSuccess() {
		return candidate{}, false
	}
	// Reprieve as many as possible, highest priority first, those a PDB protects first.
	sort.SliceStable(lower, func(i, j int) bool {
		return corev1helpers.PodPriority(lower[i].Pod) > corev1helpers.PodPriority(lower[j].Pod)
	})
	allowed := map[string]int32{}
	for _, b := range pdbs {
		allowed[b.Namespace+"/"+b.Name] = b.Status.DisruptionsAllowed
	}
	var violating, safe []*framework.PodInfo
	for _, pi := range lower {
		if violates(pi.Pod, pdbs, allowed) {
			violating = append(violating, pi)
		} else {
			safe = append(safe, pi)
		}
	}
	c := candidate{node: n.Node().Name}
	reprieve := func(pi *framework.PodInfo, violation bool) {
		trial.AddPod(pi)
		if p.h.RunFilters(ctx, pod, what, trial).IsSuccess() {
			return
		}
		trial.RemovePod(pi.Pod)
		c.victims = append(c.victims, pi.Pod)
		if violation {
			c.pdbViolations++
		}
	}
	for _, pi := range violating {
		reprieve(pi, true)
	}
	for _, pi := range safe {
		reprieve(pi, false)
	}
	return c, len(c.victims) > 0
}

// violates says whether evicting pod breaks a PDB that allows no more disruptions; each
// counted eviction uses one allowed disruption.
func violates(pod *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, allowed map[string]int32) bool {
	out := false
	for _, b := range pdbs {
		if b.Namespace != pod.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		key := b.Namespace + "/" + b.Name
		allowed[key]--
		if allowed[key] < 0 {
			out = true
		}
	}
	return out
}

// pick is kube-scheduler's candidate order.
func pick(cs []candidate) candidate {
	highest := func(c candidate) int32 {
		h := int32(math.MinInt32)
		for _, v := range c.victims {
			h = max(h, corev1helpers.PodPriority(v))
		}
		return h
	}
	sum := func(c candidate) int64 {
		var s int64
		for _, v := range c.victims {
			// Shifted so negative priorities still add up as "more".
			s += int64(corev1helpers.PodPriority(v)) + math.MaxInt32 + 1
		}
		return s
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.pdbViolations != b.pdbViolations {
			return a.pdbViolations < b.pdbViolations
		}
		if ha, hb := highest(a), highest(b); ha != hb {
			return ha < hb
		}
		if sa, sb := sum(a), sum(b); sa != sb {
			return sa < sb
		}
		if len(a.victims) != len(b.victims) {
			return len(a.victims) < len(b.victims)
		}
		return strings.Compare(a.node, b.node) < 0
	})
	return cs[0]
}

// overlay is the snapshot with one node replaced by a what-if copy.
type overlay struct {
	framework.NodeLister
	node *framework.NodeInfo
}

func (o overlay) swap(list []*framework.NodeInfo) []*framework.NodeInfo {
	out := make([]*framework.NodeInfo, 0, len(list)+1)
	name := o.node.Node().Name
	found := false
	for _, n := range list {
		if n.Node().Name == name {
			n, found = o.node, true
		}
		out = append(out, n)
	}
	if !found {
		out = append(out, o.node)
	}
	return out
}

func (o overlay) List() []*framework.NodeInfo { return o.swap(o.NodeLister.List()) }

func (o overlay) Get(name string) *framework.NodeInfo {
	if name == o.node.Node().Name {
		return o.node
	}
	return o.NodeLister.Get(name)
}

func (o overlay) HavePodsWithAffinity() []*framework.NodeInfo {
	return o.swap(o.NodeLister.HavePodsWithAffinity())
}

func (o overlay) HavePodsWithRequiredAntiAffinity() []*framework.NodeInfo {
	return o.swap(o.NodeLister.HavePodsWithRequiredAntiAffinity())
}

func (o overlay) PodsMatching(t *framework.AffinityTerm, nsLabels func(string) labels.Set) iter.Seq2[*framework.PodInfo, *framework.NodeInfo] {
	return func(yield func(*framework.PodInfo, *framework.NodeInfo) bool) {
		name := o.node.Node().Name
		for pi, n := range o.NodeLister.PodsMatching(t, nsLabels) {
			if n.Node().Name != name && !yield(pi, n) {
				return
			}
		}
		for _, pi := range o.node.Pods {
			if t.Matches(pi.Pod, nsLabels(pi.Pod.Namespace)) && !yield(pi, o.node) {
				return
			}
		}
	}
}

func (o overlay) RequiredAntiAffinityTermsFor(pod *corev1.Pod) iter.Seq2[*framework.AffinityTerm, iter.Seq[*framework.NodeInfo]] {
	return func(yield func(*framework.AffinityTerm, iter.Seq[*framework.NodeInfo]) bool) {
		name := o.node.Node().Name
		for t, holders := range o.NodeLister.RequiredAntiAffinityTermsFor(pod) {
			others := func(yield func(*framework.NodeInfo) bool) {
				for n := range holders {
					if n.Node().Name != name && !yield(n) {
						return
					}
				}
			}
			if !yield(t, others) {
				return
			}
		}
		trial := func(yield func(*framework.NodeInfo) bool) { yield(o.node) }
		for _, pi := range o.node.PodsWithRequiredAntiAffinity {
			for i := range pi.RequiredAntiAffinityTerms {
				if !yield(&pi.RequiredAntiAffinityTerms[i], trial) {
					return
				}
			}
		}
	}
}
