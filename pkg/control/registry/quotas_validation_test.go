package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResourceQuotaValidation: kube's ValidateResourceQuota and its update: names a quota
// can limit, whole numbers for counted resources, scopes fitting the resources, and
// scopes that do not change.
func TestResourceQuotaValidation(t *testing.T) {
	quota := func(hard corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: objMeta("q"), Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}}
	}
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	for _, tc := range []struct {
		what       string
		q          *corev1.ResourceQuota
		field, msg string // "" when valid
	}{
		{"counted and computed", quota(list("pods", "10", "requests.cpu", "1500m", "count/deployments.apps", "3", "requests.example.com/gpu", "2", "requests.hugepages-2Mi", "1Gi")), "", ""},
		{"half a pod", quota(list("pods", "1.5")), "spec.hard[pods]", `Invalid value: "1500m": must be an integer`},
		{"half a Service", quota(list("services", "500m")), "spec.hard[services]", "must be an integer"},
		{"negative", quota(list("pods", "-1")), "spec.hard[pods]", `Invalid value: "-1": must be greater than or equal to 0`},
		{"unknown name", quota(list("gpu", "1")), "spec.hard[gpu]", `Invalid value: "gpu": must be a standard resource type or fully qualified`},
		{"storage alone", quota(list("storage", "1Gi")), "spec.hard[storage]", `Invalid value: "storage": must be a standard resource for quota`},
		{"bad name", quota(list("example.com/a b", "1")), "spec.hard[example.com/a b]", "name part must consist of alphanumeric characters"},
		{"unknown scope", quota(list("pods", "1"), "Sometimes"), "spec.scopes", `Invalid value: ["Sometimes"]: unsupported scope`},
		{"BestEffort limits memory", quota(list("memory", "1Gi"), corev1.ResourceQuotaScopeBestEffort), "spec.scopes", "unsupported scope applied to resource"},
		{"conflicting", quota(list("pods", "1"), corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating), "spec.scopes", "conflicting scopes"},
	} {
		errs := createSteps(resourceQuotaRules, tc.q)
		if tc.field == "" {
			if len(errs) > 0 {
				t.Errorf("%s: %v", tc.what, errs.ToAggregate())
			}
			continue
		}
		expectMessage(t, errs, tc.field, tc.msg)
	}

	selector := func(reqs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
		q := quota(list("pods", "1"))
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: reqs}
		return q
	}
	expectMessage(t, createSteps(resourceQuotaRules, selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn})),
		"spec.scopeSelector.matchExpressions.values", "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector")
	expectMessage(t, createSteps(resourceQuotaRules, selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpIn, Values: []string{"x"}})),
		"spec.scopeSelector.matchExpressions.operator", "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating")
	expectMessage(t, createSteps(resourceQuotaRules, selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: "Near", Values: []string{"x"}})),
		"spec.scopeSelector.matchExpressions.operator", `Invalid value: "Near": not a valid selector operator`)
	if errs := createSteps(resourceQuotaRules, selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}})); len(errs) > 0 {
		t.Errorf("a priority class selector: %v", errs.ToAggregate())
	}

	old := quota(list("pods", "1"), corev1.ResourceQuotaScopeNotTerminating)
	old.ResourceVersion = "1"
	changed := old.DeepCopy()
	changed.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
	expectMessage(t, updateSteps(resourceQuotaRules, changed, old), "spec.scopes", "field is immutable")
	used := old.DeepCopy()
	used.Status.Used = list("pods", "500m")
	expectMessage(t, updateSteps(resourceQuotaRules, used, old), "status.used[pods]", "must be an integer")
}
