package core

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mergeLabelKeys is kube's pod strategy on create (mutatePodAffinity and, with
// MatchLabelKeysInPodTopologySpreadSelectorMerge on by default in 1.36,
// mutateTopologySpreadConstraints): the pod's own values of a term's matchLabelKeys join
// its selector as "key in (value)", those of mismatchLabelKeys as "key notin (value)",
// so the stored pod says whom it selects. A nil selector matches nothing and stays nil.
func mergeLabelKeys(pod *corev1.Pod) {
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			mergeTermLabelKeys(pod.Labels, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			mergeTermLabelKeys(pod.Labels, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		c := &pod.Spec.TopologySpreadConstraints[i]
		addLabelKeys(c.LabelSelector, c.MatchLabelKeys, metav1.LabelSelectorOpIn, pod.Labels)
	}
}

func mergeTermLabelKeys(labels map[string]string, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
	merge := func(t *corev1.PodAffinityTerm) {
		addLabelKeys(t.LabelSelector, t.MatchLabelKeys, metav1.LabelSelectorOpIn, labels)
		addLabelKeys(t.LabelSelector, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn, labels)
	}
	for i := range preferred {
		merge(&preferred[i].PodAffinityTerm)
	}
	for i := range required {
		merge(&required[i])
	}
}

// addLabelKeys adds to selector a requirement of op for each key the pod has a label of.
func addLabelKeys(selector *metav1.LabelSelector, keys []string, op metav1.LabelSelectorOperator, labels map[string]string) {
	if selector == nil {
		return
	}
	for _, key := range keys {
		if value, ok := labels[key]; ok {
			selector.MatchExpressions = append(selector.MatchExpressions,
				metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: []string{value}})
		}
	}
}
