package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// DefaultNormalizeScore scales scores so the highest is MaxNodeScore (reversed: the
// highest becomes 0), as kube-scheduler's helper of that name.
func DefaultNormalizeScore(reverse bool, scores []NodeScore) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s.Score)
	}
	if highest == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = MaxNodeScore
			}
		}
		return
	}
	for i := range scores {
		s := MaxNodeScore * scores[i].Score / highest
		if reverse {
			s = MaxNodeScore - s
		}
		scores[i].Score = s
	}
}

// NamespaceLabels reads a namespace's labels (nil when it is unknown).
func NamespaceLabels(lister corelisters.NamespaceLister, name string) labels.Set {
	if lister == nil {
		return nil
	}
	ns, err := lister.Get(name)
	if err != nil {
		return nil
	}
	return ns.Labels
}

// IsTerminating is true for a pod being deleted.
func IsTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }
