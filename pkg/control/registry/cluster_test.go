package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPriorityClassRules(t *testing.T) {
	for _, pc := range SystemPriorityClasses() {
		if errs := createSteps(priorityClassRules, pc); len(errs) > 0 {
			t.Errorf("%s: %v", pc.Name, errs.ToAggregate())
		}
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 5}
	expectErrors(t, "system- prefix", createSteps(priorityClassRules, pc), "metadata.name: FieldValueForbidden")
	pc = &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Value: 2000000000}
	expectErrors(t, "above user range", createSteps(priorityClassRules, pc), "value: FieldValueForbidden")
	pc = &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	if errs := createSteps(priorityClassRules, pc); len(errs) > 0 || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("user class: %v %v", errs.ToAggregate(), pc.PreemptionPolicy)
	}
	changed := pc.DeepCopy()
	changed.Value = 2000
	expectErrors(t, "new value", updateSteps(priorityClassRules, changed, pc), "value: FieldValueForbidden")
}

func TestPodDisruptionBudgetRules(t *testing.T) {
	two, half := intstr.FromInt32(2), intstr.FromString("150%")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("pdb"), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, MaxUnavailable: &half}}
	pdb.Status.DisruptionsAllowed = 4
	expectErrors(t, "both bounds", createSteps(podDisruptionBudgetRules, pdb), "spec: FieldValueInvalid", "spec.maxUnavailable: FieldValueInvalid")
	if pdb.Status.DisruptionsAllowed != 0 {
		t.Error("status must be reset on create")
	}
	pdb.Spec.MaxUnavailable = nil
	if row := podDisruptionBudgetRules.Table.Row(pdb); row[1] != "2" || row[2] != "N/A" {
		t.Errorf("pdb row: %v", row)
	}
}

func TestRBACRules(t *testing.T) {
	role := &rbacv1.Role{ObjectMeta: objMeta("reader"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}
	expectErrors(t, "rule without verbs", createSteps(roleRules, role), "rules[0].verbs: FieldValueRequired")
	b := &rbacv1.RoleBinding{ObjectMeta: objMeta("b"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}, {Kind: "Robot", Name: "r2"}}}
	expectErrors(t, "unknown subject kind", createSteps(roleBindingRules, b), "subjects[1].kind: FieldValueNotSupported")
	b.Subjects = b.Subjects[:1]
	changed := b.DeepCopy()
	changed.RoleRef.Name = "admin"
	expectErrors(t, "new roleRef", updateSteps(roleBindingRules, changed, b), "roleRef: FieldValueInvalid")
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}}
	expectErrors(t, "cluster binding to a role", createSteps(clusterRoleBindingRules, crb), "roleRef.kind: FieldValueNotSupported")
	if row := roleBindingRules.Table.Row(b); row[1] != "Role/reader" || row[3] != "alice" {
		t.Errorf("binding row: %v", row)
	}
	// Kubernetes' rbac/v1 defaults: the roleRef's group, and a User's or Group's (the webhook
	// conformance tests bind a role with neither).
	bare := &rbacv1.RoleBinding{ObjectMeta: objMeta("bare"), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "g"}, {Kind: rbacv1.ServiceAccountKind, Name: "sa", Namespace: "ns"}}}
	bareCluster := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}}
	expectErrors(t, "binding without groups", createSteps(roleBindingRules, bare))
	expectErrors(t, "cluster binding without groups", createSteps(clusterRoleBindingRules, bareCluster))
	if bare.RoleRef.APIGroup != rbacv1.GroupName || bare.Subjects[0].APIGroup != rbacv1.GroupName || bare.Subjects[1].APIGroup != "" ||
		bareCluster.RoleRef.APIGroup != rbacv1.GroupName || bareCluster.Subjects[0].APIGroup != rbacv1.GroupName {
		t.Errorf("defaulted groups: %+v %+v, %+v %+v", bare.RoleRef, bare.Subjects, bareCluster.RoleRef, bareCluster.Subjects)
	}
}

// TestRBACRoleRules: kube-apiserver's ValidateRole and ValidateClusterRole: a Role's rules
// may not name non-resource URLs; a ClusterRole's rules are checked with an
// aggregationRule too, which needs a valid selector or more.
func TestRBACRoleRules(t *testing.T) {
	urls := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}
	role := &rbacv1.Role{ObjectMeta: objMeta("urls"), Rules: []rbacv1.PolicyRule{urls}}
	expectErrors(t, "a Role naming a non-resource URL", createSteps(roleRules, role), "rules[0].nonResourceURLs: FieldValueInvalid")
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "urls"}, Rules: []rbacv1.PolicyRule{urls}}
	expectErrors(t, "a ClusterRole naming a non-resource URL", createSteps(clusterRoleRules, clusterRole))
	aggregated := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}
	expectErrors(t, "an aggregated ClusterRole", createSteps(clusterRoleRules, aggregated),
		"rules[0].verbs: FieldValueRequired", "aggregationRule.clusterRoleSelectors: FieldValueRequired")
	aggregated.Rules = nil
	aggregated.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"a/b/c": "x"}}}
	expectErrors(t, "an aggregated ClusterRole with a bad selector", createSteps(clusterRoleRules, aggregated),
		"aggregationRule.clusterRoleSelectors[0].matchLabels: FieldValueInvalid")
}

func TestVolumeRules(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
	}}
	if errs := createSteps(persistentVolumeRules, pv); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if pv.Status.Phase != corev1.VolumePending || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("pv not defaulted: %+v", pv)
	}
	if row := persistentVolumeRules.Table.Row(pv); row[1] != "1Gi" || row[2] != "RWO,ROX" || row[4] != "Pending" {
		t.Errorf("pv row: %v", row)
	}
	pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}
	pv.Spec.AccessModes = nil
	expectErrors(t, "two sources, no modes", persistentVolumeRules.Validate(pv), "spec: FieldValueForbidden", "spec.accessModes: FieldValueRequired")

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data"), Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
	}}
	expectErrors(t, "claim without a size", createSteps(persistentVolumeClaimRules, pvc), "spec.resources[storage]: FieldValueRequired")
	pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	if errs := createSteps(persistentVolumeClaimRules, pvc); len(errs) > 0 || pvc.Status.Phase != corev1.ClaimPending {
		t.Fatal(errs.ToAggregate(), pvc.Status.Phase)
	}
	grown, moved := pvc.DeepCopy(), pvc.DeepCopy()
	grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	expectErrors(t, "grown pending claim", updateSteps(persistentVolumeClaimRules, grown, pvc), "spec: FieldValueForbidden")
	bound := pvc.DeepCopy()
	bound.Spec.VolumeName, bound.Status.Phase = "pv", corev1.ClaimBound
	grown = bound.DeepCopy()
	grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	expectErrors(t, "grown bound claim", updateSteps(persistentVolumeClaimRules, grown, bound))
	moved.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	expectErrors(t, "new access mode", updateSteps(persistentVolumeClaimRules, moved, pvc), "spec: FieldValueForbidden")
}

func TestEndpointsRules(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: objMeta("web"), Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5"}, {IP: "127.0.0.1"}},
		Ports:     []corev1.EndpointPort{{Port: 8080}, {Name: "metrics", Port: 0}},
	}}}
	expectErrors(t, "endpoints", createSteps(endpointsRules, ep),
		"subsets[0].addresses[1].ip: FieldValueInvalid", "subsets[0].ports[0].name: FieldValueRequired", "subsets[0].ports[1].port: FieldValueInvalid")
	if ep.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Error("endpoint port protocol not defaulted")
	}
	ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, corev1.EndpointAddress{IP: "10.244.1.6"}, corev1.EndpointAddress{IP: "10.244.1.7"})
	ep.Subsets[0].Ports = ep.Subsets[0].Ports[:1]
	if got := endpointsText(ep); got != "10.244.1.5:8080,127.0.0.1:8080,10.244.1.6:8080 + 1 more..." {
		t.Errorf("ENDPOINTS column: %q", got)
	}

	port := int32(80)
	slice := &discoveryv1.EndpointSlice{ObjectMeta: objMeta("web-abc"), AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}}, {Addresses: []string{"fd00::1"}}, {}},
		Ports:     []discoveryv1.EndpointPort{{Port: &port}}}
	expectErrors(t, "slice", createSteps(endpointSliceRules, slice), "endpoints[1].addresses[0]: FieldValueInvalid", "endpoints[2].addresses: FieldValueRequired")
	if *slice.Ports[0].Protocol != corev1.ProtocolTCP || *slice.Ports[0].Name != "" {
		t.Error("slice port not defaulted")
	}
	changed := slice.DeepCopy()
	changed.AddressType = discoveryv1.AddressTypeIPv6
	changed.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}}
	expectErrors(t, "new address type", updateSteps(endpointSliceRules, changed, slice), "addressType: FieldValueInvalid")
}

func TestQuotaAndLimitRangeRules(t *testing.T) {
	q := &corev1.ResourceQuota{ObjectMeta: objMeta("q"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("-1")}}}
	expectErrors(t, "negative quota", createSteps(resourceQuotaRules, q), "spec.hard[pods]: FieldValueInvalid")
	q.Status = corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "limits.cpu": resource.MustParse("4")},
		Used: corev1.ResourceList{"pods": resource.MustParse("3"), "limits.cpu": resource.MustParse("1")},
	}
	if row := resourceQuotaRules.Table.Row(q); row[1] != "pods: 3/10" || row[2] != "limits.cpu: 1/4" {
		t.Errorf("quota row: %v", row)
	}
	lr := &corev1.LimitRange{ObjectMeta: objMeta("lr"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Min: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}}}
	if errs := createSteps(limitRangeRules, lr); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	item := lr.Spec.Limits[0]
	if item.Default.Cpu().String() != "2" || item.DefaultRequest.Cpu().String() != "2" || item.DefaultRequest.Memory().String() != "64Mi" {
		t.Errorf("limit range item not defaulted: %+v", item)
	}
	lr.Spec.Limits[0].Min[corev1.ResourceCPU] = resource.MustParse("3")
	// The defaults (2, from max) are below min too, as kube tells.
	expectErrors(t, "min above max", limitRangeRules.Validate(lr), "spec.limits[0].min[cpu]: FieldValueInvalid",
		"spec.limits[0].defaultRequest[cpu]: FieldValueInvalid", "spec.limits[0].default[cpu]: FieldValueInvalid")
}

func TestEventTables(t *testing.T) {
	core := &corev1.Event{ObjectMeta: objMeta("web.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web"},
		Type: "Normal", Reason: "Scheduled", Message: " placed ", Source: corev1.EventSource{Component: "default-scheduler"}}
	row := eventRules.Table.Row(core)
	if row[3] != "pod/web" || row[5] != "default-scheduler" || row[6] != "placed" || row[8] != int64(1) {
		t.Errorf("core event row: %v", row)
	}
	v1 := &eventsv1.Event{ObjectMeta: objMeta("web.2"), Regarding: corev1.ObjectReference{Kind: "Node", Name: "n1"},
		EventTime: metav1.NowMicro(), ReportingController: "minilet", ReportingInstance: "n1", Note: "ready", Type: "Normal"}
	row = eventsV1Rules.Table.Row(v1)
	if row[3] != "node/n1" || row[5] != "minilet, n1" || row[6] != "ready" || row[7] == "<unknown>" {
		t.Errorf("events.k8s.io event row: %v", row)
	}
	v1.ReportingController = ""
	expectErrors(t, "events.k8s.io event", eventsV1Rules.Validate(v1), "reportingController: FieldValueRequired",
		"reportingController: FieldValueInvalid", "reportingController: FieldValueInvalid", "action: FieldValueRequired", "reason: FieldValueRequired")
}
