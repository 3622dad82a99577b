package replicaset

import (
	"math"
	"sort"
	"time"

	"github.com/minik8s/minik8s/internal/controller/podready"
	"github.com/minik8s/minik8s/internal/deletioncost"
	corev1 "k8s.io/api/core/v1"
)

// podsToDelete picks n of pods to scale down, least useful first, in kube-controller-manager's
// ActivePodsWithRanks order: unassigned before assigned; pending before unknown before
// running; not ready before ready; a lower pod-deletion-cost first; a pod sharing its node
// with more of related's active pods first; ready for less time first; more restarts first;
// newer first. Ready and creation times are compared by the log2 of their age at now, as
// kube's LogarithmicScaleDown does: pods of about the same age are told apart by UID, so a
// scale-down does not always take the newest.
func podsToDelete(pods, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range activePods(related) {
		onNode[p.Spec.NodeName]++
	}
	ranked := make([]rankedPod, len(pods))
	for i, p := range pods {
		cost, _ := deletioncost.Of(p.Annotations)
		ready, since := podready.Since(p)
		ranked[i] = rankedPod{Pod: p, cost: cost, colocated: onNode[p.Spec.NodeName], ready: ready, readySince: since}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return lessUseful(&ranked[i], &ranked[j], now) })
	victims := make([]*corev1.Pod, n)
	for i := range victims {
		victims[i] = ranked[i].Pod
	}
	return victims
}

// rankedPod is a pod with what its rank is computed from.
type rankedPod struct {
	*corev1.Pod
	cost       int32
	colocated  int // active related pods on its node, itself included
	ready      bool
	readySince time.Time
}

var phaseRank = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// lessUseful reports whether a should go before b.
func lessUseful(a, b *rankedPod, now time.Time) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if phaseRank[a.Status.Phase] != phaseRank[b.Status.Phase] {
		return phaseRank[a.Status.Phase] < phaseRank[b.Status.Phase]
	}
	if a.ready != b.ready {
		return !a.ready
	}
	if a.cost != b.cost {
		return a.cost < b.cost
	}
	if a.colocated != b.colocated {
		return a.colocated > b.colocated
	}
	if a.ready && !a.readySince.Equal(b.readySince) {
		return youngerByLogAge(a.Pod, b.Pod, a.readySince, b.readySince, now)
	}
	if ra, rb := restarts(a.Pod, false), restarts(b.Pod, false); ra != rb {
		return ra > rb
	}
	if ra, rb := restarts(a.Pod, true), restarts(b.Pod, true); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return youngerByLogAge(a.Pod, b.Pod, a.CreationTimestamp.Time, b.CreationTimestamp.Time, now)
	}
	return false
}

// youngerByLogAge reports whether a, of time ta, goes before b, of time tb: a missing time
// first, then the younger by the log2 of its age in nanoseconds, then by UID when both
// ages have the same log2.
func youngerByLogAge(a, b *corev1.Pod, ta, tb, now time.Time) bool {
	if ta.IsZero() || tb.IsZero() {
		return ta.IsZero()
	}
	if ra, rb := logAge(now.Sub(ta)), logAge(now.Sub(tb)); ra != rb {
		return ra < rb
	}
	return a.UID < b.UID
}

// logAge is the integer log2 of an age in nanoseconds, -1 for none or a time to come.
func logAge(age time.Duration) int64 {
	if age <= 0 {
		return -1
	}
	return int64(math.Log2(float64(age)))
}

// restarts is the highest restart count among the pod's containers, or among its
// sidecars (init containers that restart always) if sidecars.
func restarts(p *corev1.Pod, sidecars bool) int32 {
	statuses := p.Status.ContainerStatuses
	if sidecars {
		statuses = nil
		for _, s := range p.Status.InitContainerStatuses {
			for _, c := range p.Spec.InitContainers {
				if c.Name == s.Name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
					statuses = append(statuses, s)
				}
			}
		}
	}
	var most int32
	for _, s := range statuses {
		most = max(most, s.RestartCount)
	}
	return most
}
