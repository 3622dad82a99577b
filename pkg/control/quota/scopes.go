package quota

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ScopeRequirements are a quota's scopes and scopeSelector, one requirement each.
func ScopeRequirements(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var reqs []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		reqs = append(reqs, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if sel := q.Spec.ScopeSelector; sel != nil {
		reqs = append(reqs, sel.MatchExpressions...)
	}
	return reqs
}

// PodMatches says whether a pod falls under every scope requirement of a quota.
func PodMatches(reqs []corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	for _, r := range reqs {
		if !podMatchesScope(r, pod) {
			return false
		}
	}
	return true
}

func podMatchesScope(r corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	switch r.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return pod.Spec.ActiveDeadlineSeconds != nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return pod.Spec.ActiveDeadlineSeconds == nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		switch r.Operator {
		case corev1.ScopeSelectorOpExists:
			return pod.Spec.PriorityClassName != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return pod.Spec.PriorityClassName == ""
		case corev1.ScopeSelectorOpIn:
			return slices.Contains(r.Values, pod.Spec.PriorityClassName)
		case corev1.ScopeSelectorOpNotIn:
			return !slices.Contains(r.Values, pod.Spec.PriorityClassName)
		}
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod)
	}
	return false
}

// bestEffort is a pod without any request or limit on cpu or memory.
func bestEffort(pod *corev1.Pod) bool {
	for _, list := range []corev1.ResourceList{resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})} {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := list[name]; ok && !q.IsZero() {
				return false
			}
		}
	}
	return true
}

// crossNamespaceAffinity is a pod whose (anti-)affinity terms name other namespaces.
func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil })
}
