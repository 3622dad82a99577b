package networking

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceCIDRRules(t *testing.T) {
	sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec:   networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.0.0.0/24"}},
		Status: networkingv1.ServiceCIDRStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}}}
	if errs := registrytest.CreateSteps(ServiceCIDRRules, sc); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if len(sc.Status.Conditions) != 0 {
		t.Errorf("a created ServiceCIDR keeps its status %+v; only controllers set it", sc.Status)
	}
	if row := ServiceCIDRRules.Table.Row(sc); row[1] != "10.0.0.0/24" {
		t.Errorf("row %q", row)
	}
	// A single-stack ServiceCIDR may become dual-stack; nothing else changes.
	dual := sc.DeepCopy()
	dual.Spec.CIDRs = append(dual.Spec.CIDRs, "fd00::/108")
	if errs := registrytest.UpdateSteps(ServiceCIDRRules, dual, sc); len(errs) > 0 {
		t.Error(errs.ToAggregate())
	}
	moved := sc.DeepCopy()
	moved.Spec.CIDRs = []string{"10.0.1.0/24"}
	registrytest.ExpectMessage(t, registrytest.UpdateSteps(ServiceCIDRRules, moved, sc), "spec.cidrs[0]", "field is immutable")
	registrytest.ExpectMessage(t, registrytest.UpdateSteps(ServiceCIDRRules, sc, dual), "spec.cidrs", "field is immutable")

	for _, c := range []struct {
		cidrs      []string
		path, want string
	}{
		{nil, "spec.cidrs", "at least one CIDR required"},
		{[]string{"10.0.0.0/24", "fd00::/108", "10.1.0.0/24"}, "spec.cidrs", `Invalid value: {"CIDRs":["10.0.0.0/24","fd00::/108","10.1.0.0/24"]}: may only hold up to 2 values`}, // kube prints its internal spec
		{[]string{"10.0.0.1/24"}, "spec.cidrs[0]", "must not have bits set beyond the prefix length"},
		{[]string{"nope"}, "spec.cidrs[0]", "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"},
		{[]string{"10.0.0.0/24", "10.1.0.0/24"}, "spec.cidrs", "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"},
	} {
		bad := sc.DeepCopy()
		bad.Spec.CIDRs = c.cidrs
		registrytest.ExpectMessage(t, ServiceCIDRRules.Validate(bad), c.path, c.want)
	}
}

func TestIPAddressRules(t *testing.T) {
	ref := &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}
	ip := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.10"}, Spec: networkingv1.IPAddressSpec{ParentRef: ref}}
	if errs := registrytest.CreateSteps(IPAddressRules, ip); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if row := IPAddressRules.Table.Row(ip); row[1] != "services/default/web" {
		t.Errorf("row %q", row)
	}
	v6 := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "fe80::42:1dff:fe84:f9e2"}, Spec: networkingv1.IPAddressSpec{
		ParentRef: &networkingv1.ParentReference{Group: "mygroup", Resource: "myresources", Name: "bar"}}}
	if errs := registrytest.CreateSteps(IPAddressRules, v6); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if row := IPAddressRules.Table.Row(v6); row[1] != "myresources.mygroup/bar" {
		t.Errorf("row %q", row)
	}
	moved := ip.DeepCopy()
	moved.Spec.ParentRef = &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "other"}
	registrytest.ExpectMessage(t, registrytest.UpdateSteps(IPAddressRules, moved, ip), "spec.parentRef", "field is immutable")

	noncanonical := ip.DeepCopy()
	noncanonical.Name = "2001:db8:0::1"
	registrytest.ExpectMessage(t, IPAddressRules.Validate(noncanonical), "metadata.name", `must be in canonical form ("2001:db8::1")`)
	orphan := ip.DeepCopy()
	orphan.Spec.ParentRef = nil
	registrytest.ExpectErrors(t, "no parent", IPAddressRules.Validate(orphan), "spec.parentRef: FieldValueRequired")
	bad := ip.DeepCopy()
	bad.Spec.ParentRef = &networkingv1.ParentReference{Group: "Not_A_Group", Namespace: "a/b", Name: ".."}
	registrytest.ExpectErrors(t, "bad parent", IPAddressRules.Validate(bad), "spec.parentRef.group: FieldValueInvalid",
		"spec.parentRef.resource: FieldValueRequired", "spec.parentRef.name: FieldValueInvalid", "spec.parentRef.namespace: FieldValueInvalid")
}
