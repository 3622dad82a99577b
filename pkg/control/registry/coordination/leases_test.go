package coordination

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestLeaseValidation: a Lease's spec is checked as kube-apiserver checks it (the strategy's
// path repeated, as kube writes it), on create and on update.
func TestLeaseValidation(t *testing.T) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"}, Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To("me"), LeaseDurationSeconds: ptr.To[int32](0), LeaseTransitions: ptr.To[int32](-1),
		Strategy: ptr.To[coordinationv1.CoordinatedLeaseStrategy]("Newest"),
	}}
	want := []string{
		`spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`,
		`spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0`,
		`spec.strategy.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion"`,
	}
	registrytest.ExpectMessages(t, "create", LeaseRules.Validate(l), want...)
	registrytest.ExpectMessages(t, "update", LeaseRules.ValidateUpdate(l, l), want...)
	l.Spec = coordinationv1.LeaseSpec{PreferredHolder: ptr.To("you"), Strategy: ptr.To[coordinationv1.CoordinatedLeaseStrategy]("example.com/x y")}
	registrytest.ExpectMessages(t, "strategy", LeaseRules.Validate(l),
		`spec.strategy.strategy: Invalid value: "example.com/x y": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`)
	l.Spec.Strategy = nil
	registrytest.ExpectMessages(t, "preferredHolder", LeaseRules.Validate(l), "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined")
}

// TestLeaseCoordinatedFieldsDropped: with kube's CoordinatedLeaderElection gate off, a new
// Lease's strategy and preferred holder are dropped; a stored Lease that has them keeps them.
func TestLeaseCoordinatedFieldsDropped(t *testing.T) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"}, Spec: coordinationv1.LeaseSpec{
		PreferredHolder: ptr.To("you"), Strategy: ptr.To[coordinationv1.CoordinatedLeaseStrategy]("Bogus"),
	}}
	stored := l.DeepCopy()
	registrytest.ExpectErrors(t, "create", registrytest.CreateSteps(LeaseRules, l))
	if l.Spec.Strategy != nil || l.Spec.PreferredHolder != nil {
		t.Errorf("created with strategy %v and preferred holder %v, want both dropped", l.Spec.Strategy, l.Spec.PreferredHolder)
	}
	changed := l.DeepCopy()
	changed.Spec.Strategy = ptr.To(coordinationv1.OldestEmulationVersion)
	registrytest.ExpectErrors(t, "update setting a strategy", registrytest.UpdateSteps(LeaseRules, changed, l))
	if changed.Spec.Strategy != nil {
		t.Errorf("update set strategy %v, want it dropped", *changed.Spec.Strategy)
	}
	changed = stored.DeepCopy()
	registrytest.ExpectErrors(t, "update of a stored strategy", registrytest.UpdateSteps(LeaseRules, changed, stored),
		"spec.strategy.strategy: FieldValueNotSupported")
}
