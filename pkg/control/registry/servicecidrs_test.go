package registry

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceCIDRRules(t *testing.T) {
	sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec:   networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.0.0.0/24"}},
		Status: networkingv1.ServiceCIDRStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}}}
	if errs := createSteps(serviceCIDRRules, sc); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if len(sc.Status.Conditions) != 0 {
		t.Errorf("a created ServiceCIDR keeps its status %+v; only controllers set it", sc.Status)
	}
	if row := serviceCIDRRules.Table.Row(sc); row[1] != "10.0.0.0/24" {
		t.Errorf("row %q", row)
	}
	// A single-stack ServiceCIDR may become dual-stack; nothing else changes.
	dual := sc.DeepCopy()
	dual.Spec.CIDRs = append(dual.Spec.CIDRs, "fd00::/108")
	if errs := updateSteps(serviceCIDRRules, dual, sc); len(errs) > 0 {
		t.Error(errs.ToAggregate())
	}
	moved := sc.DeepCopy()
	moved.Spec.CIDRs = []string{"10.0.1.0/24"}
	expectMessage(t, updateSteps(serviceCIDRRules, moved, sc), "spec.cidrs[0]", "field is immutable")
	expectMessage(t, updateSteps(serviceCIDRRules, sc, dual), "spec.cidrs", "field is immutable")

	for _, c := range []struct {
		cidrs      []string
		path, want string
	}{
		{nil, "spec.cidrs", "at least one CIDR required"},
		{[]string{"10.0.0.0/24", "fd00::/108", "10.1.0.0/24"}, "spec.cidrs", "may only hold up to 2 values"},
		{[]string{"10.0.0.1/24"}, "spec.cidrs[0]", "must not have bits set beyond the prefix length"},
		{[]string{"nope"}, "spec.cidrs[0]", "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"},
		{[]string{"10.0.0.0/24", "10.1.0.0/24"}, "spec.cidrs", "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"},
	} {
		bad := sc.DeepCopy()
		bad.Spec.CIDRs = c.cidrs
		expectMessage(t, serviceCIDRRules.Validate(bad), c.path, c.want)
	}
}

func TestIPAddressRules(t *testing.T) {
	ref := &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}
	ip := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.10"}, Spec: networkingv1.IPAddressSpec{ParentRef: ref}}
	if errs := createSteps(ipAddressRules, ip); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if row := ipAddressRules.Table.Row(ip); row[1] != "services/default/web" {
		t.Errorf("row %q", row)
	}
	v6 := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "fe80::42:1dff:fe84:f9e2"}, Spec: networkingv1.IPAddressSpec{
		ParentRef: &networkingv1.ParentReference{Group: "mygroup", Resource: "myresources", Name: "bar"}}}
	if errs := createSteps(ipAddressRules, v6); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if row := ipAddressRules.Table.Row(v6); row[1] != "myresources.mygroup/bar" {
		t.Errorf("row %q", row)
	}
	moved := ip.DeepCopy()
	moved.Spec.ParentRef = &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "other"}
	expectMessage(t, updateSteps(ipAddressRules, moved, ip), "spec.parentRef", "field is immutable")

	noncanonical := ip.DeepCopy()
	noncanonical.Name = "2001:db8:0::1"
	expectMessage(t, ipAddressRules.Validate(noncanonical), "metadata.name", `must be in canonical form ("2001:db8::1")`)
	orphan := ip.DeepCopy()
	orphan.Spec.ParentRef = nil
	expectErrors(t, "no parent", ipAddressRules.Validate(orphan), "spec.parentRef: FieldValueRequired")
	bad := ip.DeepCopy()
	bad.Spec.ParentRef = &networkingv1.ParentReference{Group: "Not_A_Group", Namespace: "a/b", Name: ".."}
	expectErrors(t, "bad parent", ipAddressRules.Validate(bad), "spec.parentRef.group: FieldValueInvalid",
		"spec.parentRef.resource: FieldValueRequired", "spec.parentRef.name: FieldValueInvalid", "spec.parentRef.namespace: FieldValueInvalid")
}
