package replicaset

import (
	"sort"

	"github.com/minik8s/minik8s/internal/controller/podready"
	corev1 "k8s.io/api/core/v1"
)

// podsToDelete picks n pods to scale down, the ones whose loss hurts least first, in
// kube-controller-manager's ActivePods order: unassigned before assigned, pending before
// unknown before running, not ready before ready, ready for less time before more, more
// restarts before fewer, newer before older.
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return lessUseful(sorted[i], sorted[j]) })
	return sorted[:min(n, len(sorted))]
}

var phaseRank = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// lessUseful reports whether a should go before b.
func lessUseful(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if phaseRank[a.Status.Phase] != phaseRank[b.Status.Phase] {
		return phaseRank[a.Status.Phase] < phaseRank[b.Status.Phase]
	}
	aReady, aSince := podready.Since(a)
	bReady, bSince := podready.Since(b)
	if aReady != bReady {
		return !aReady
	}
	if aReady && !aSince.Equal(bSince) {
		return aSince.After(bSince)
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.After(b.CreationTimestamp.Time)
	}
	return a.Name > b.Name
}

// restarts is the highest restart count among the pod's containers.
func restarts(p *corev1.Pod) int32 {
	var most int32
	for _, cs := range p.Status.ContainerStatuses {
		most = max(most, cs.RestartCount)
	}
	return most
}
