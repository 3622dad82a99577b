package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
)

// TestResourceQuotaValidation: kube's ValidateResourceQuota and its update: names a quota
// can limit, whole numbers for counted resources, scopes fitting the resources, and
// scopes that do not change.
func TestResourceQuotaValidation(t *testing.T) {
	quota := func(hard corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: registrytest.ObjMeta("q"), Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}}
	}
	for _, tc := range []struct {
		what       string
		q          *corev1.ResourceQuota
		field, msg string // "" when valid
	}{
		{"counted and computed", quota(resourceList("pods", "10", "requests.cpu", "1500m", "count/deployments.apps", "3", "requests.example.com/gpu", "2", "requests.hugepages-2Mi", "1Gi")), "", ""},
		{"half a pod", quota(resourceList("pods", "1.5")), "spec.hard[pods]", `Invalid value: "1500m": must be an integer`},
		{"half a Service", quota(resourceList("services", "500m")), "spec.hard[services]", "must be an integer"},
		{"negative", quota(resourceList("pods", "-1")), "spec.hard[pods]", `Invalid value: "-1": must be greater than or equal to 0`},
		{"unknown name", quota(resourceList("gpu", "1")), "spec.hard[gpu]", `Invalid value: "gpu": must be a standard resource type or fully qualified`},
		{"storage alone", quota(resourceList("storage", "1Gi")), "spec.hard[storage]", `Invalid value: "storage": must be a standard resource for quota`},
		{"bad name", quota(resourceList("example.com/a b", "1")), "spec.hard[example.com/a b]", "name part must consist of alphanumeric characters"},
		{"unknown scope", quota(resourceList("pods", "1"), "Sometimes"), "spec.scopes", `Invalid value: ["Sometimes"]: unsupported scope`},
		{"BestEffort limits memory", quota(resourceList("memory", "1Gi"), corev1.ResourceQuotaScopeBestEffort), "spec.scopes", "unsupported scope applied to resource"},
		{"conflicting", quota(resourceList("pods", "1"), corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating), "spec.scopes", "conflicting scopes"},
	} {
		errs := registrytest.CreateSteps(ResourceQuotaRules, tc.q)
		if tc.field == "" {
			if len(errs) > 0 {
				t.Errorf("%s: %v", tc.what, errs.ToAggregate())
			}
			continue
		}
		registrytest.ExpectMessage(t, errs, tc.field, tc.msg)
	}

	// kube reports an unknown name twice: not a standard resource, not one for quota.
	unknown := registrytest.CreateSteps(ResourceQuotaRules, quota(resourceList("foo", "1")))
	if got, want := unknown.ToAggregate().Error(), `[spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified, spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota]`; got != want {
		t.Errorf("unknown resource: got %s, want %s", got, want)
	}

	selector := func(reqs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
		q := quota(resourceList("pods", "1"))
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: reqs}
		return q
	}
	registrytest.ExpectMessage(t, registrytest.CreateSteps(ResourceQuotaRules, selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn})),
		"spec.scopeSelector.matchExpressions.values", "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector")
	registrytest.ExpectMessage(t, registrytest.CreateSteps(ResourceQuotaRules, selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpIn, Values: []string{"x"}})),
		"spec.scopeSelector.matchExpressions.operator", "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating")
	registrytest.ExpectMessage(t, registrytest.CreateSteps(ResourceQuotaRules, selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: "Near", Values: []string{"x"}})),
		"spec.scopeSelector.matchExpressions.operator", `Invalid value: "Near": not a valid selector operator`)
	if errs := registrytest.CreateSteps(ResourceQuotaRules, selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}})); len(errs) > 0 {
		t.Errorf("a priority class selector: %v", errs.ToAggregate())
	}

	old := quota(resourceList("pods", "1"), corev1.ResourceQuotaScopeNotTerminating)
	old.ResourceVersion = "1"
	changed := old.DeepCopy()
	changed.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
	registrytest.ExpectMessage(t, registrytest.UpdateSteps(ResourceQuotaRules, changed, old), "spec.scopes", "field is immutable")
	used := old.DeepCopy()
	used.Status.Used = resourceList("pods", "500m")
	registrytest.ExpectMessage(t, registrytest.UpdateSteps(ResourceQuotaRules, used, old), "status.used[pods]", "must be an integer")
}

// TestLimitRangeValidation: kube's ValidateLimitRange: type and resource names, one item
// per type, and how min, max, default, defaultRequest and the ratio relate (quantities
// are not checked for sign: kube does not).
func TestLimitRangeValidation(t *testing.T) {
	lr := func(items ...corev1.LimitRangeItem) *corev1.LimitRange {
		return &corev1.LimitRange{ObjectMeta: registrytest.ObjMeta("lr"), Spec: corev1.LimitRangeSpec{Limits: items}}
	}
	for _, tc := range []struct {
		what       string
		lr         *corev1.LimitRange
		field, msg string // "" when valid
	}{
		{"containers and claims", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: resourceList("cpu", "2", "example.com/gpu", "1")},
			corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Max: resourceList("storage", "10Gi")}), "", ""},
		{"a type of a domain", lr(corev1.LimitRangeItem{Type: "example.com/thing", Max: resourceList("example.com/x", "1")}), "", ""},
		{"unknown type", lr(corev1.LimitRangeItem{Type: "Volume"}), "spec.limits[0].type", `Invalid value: "Volume": must be a standard limit type or fully qualified`},
		{"twice", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer}, corev1.LimitRangeItem{Type: corev1.LimitTypeContainer}), "spec.limits[1].type", `Duplicate value: "Container"`},
		{"storage for a container", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: resourceList("storage", "1Gi")}), "spec.limits[0].max[storage]", `Invalid value: "storage": must be a standard resource for containers`},
		{"pods for a claim", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Max: resourceList("storage", "1Gi", "gpu", "1")}), "spec.limits[0].max[gpu]", "must be a standard resource type or fully qualified"},
		{"a claim without storage", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim}), "spec.limits[0].limits", "Required value: either minimum or maximum storage value is required, but neither was provided"},
		{"default request above max", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: resourceList("cpu", "1"), DefaultRequest: resourceList("cpu", "2")}),
			"spec.limits[0].defaultRequest[cpu]", `Invalid value: "2": default request value 2 is greater than max value 1`},
		{"default below min", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resourceList("memory", "1Gi"), Default: resourceList("memory", "512Mi")}),
			"spec.limits[0].default[memory]", `Invalid value: "1Gi": min value 1Gi is greater than default value 512Mi`},
		{"request above limit", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: resourceList("cpu", "1"), DefaultRequest: resourceList("cpu", "2")}),
			"spec.limits[0].defaultRequest[cpu]", "default request value 2 is greater than default limit value 1"},
		{"ratio below one", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: resourceList("cpu", "500m")}),
			"spec.limits[0].maxLimitRequestRatio[cpu]", `Invalid value: "500m": ratio 500m is less than 1`},
		{"ratio above max/min", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: resourceList("cpu", "1"), Max: resourceList("cpu", "2"), MaxLimitRequestRatio: resourceList("cpu", "3")}),
			"spec.limits[0].maxLimitRequestRatio[cpu]", "ratio 3 is greater than max/min = 2.000000"},
		{"hugepages overcommitted", lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: resourceList("hugepages-2Mi", "4Mi"), DefaultRequest: resourceList("hugepages-2Mi", "2Mi")}),
			"spec.limits[0].defaultRequest[hugepages-2Mi]", "default value 4Mi must equal to defaultRequest value 2Mi in hugepages-2Mi"},
	} {
		errs := registrytest.CreateSteps(LimitRangeRules, tc.lr)
		if tc.field == "" {
			if len(errs) > 0 {
				t.Errorf("%s: %v", tc.what, errs.ToAggregate())
			}
			continue
		}
		registrytest.ExpectMessage(t, errs, tc.field, tc.msg)
	}
	negative := lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resourceList("cpu", "-1")})
	if errs := registrytest.CreateSteps(LimitRangeRules, negative); len(errs) > 0 {
		t.Errorf("kube does not check a limit's sign: %v", errs.ToAggregate())
	}
}
