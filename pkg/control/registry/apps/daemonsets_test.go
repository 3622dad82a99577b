package apps

import (
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDaemonSetTemplateGeneration: as kube-apiserver shows a DaemonSet's internal
// spec.templateGeneration in apps/v1, the annotation deprecated.daemonset.template.generation
// is "1" on create (or the value given, if above 0), goes up by one when the template
// changes, and stays put on other updates, whatever the client sends.
func TestDaemonSetTemplateGeneration(t *testing.T) {
	const key = appsv1.DeprecatedTemplateGeneration
	ds := &appsv1.DaemonSet{ObjectMeta: registrytest.ObjMeta("agent"), Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}, Template: registrytest.Template(map[string]string{"app": "agent"})}}
	if errs := registrytest.CreateSteps(DaemonSetRules, ds); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if got := ds.Annotations[key]; got != "1" {
		t.Fatalf("on create %s=%q, want 1", key, got)
	}
	same := ds.DeepCopy()
	same.Spec.MinReadySeconds = 5
	same.Annotations[key] = "7"
	if errs := registrytest.UpdateSteps(DaemonSetRules, same, ds); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if got := same.Annotations[key]; got != "1" {
		t.Errorf("after an update leaving the template alone %s=%q, want 1", key, got)
	}
	changed := same.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	delete(changed.Annotations, key)
	if errs := registrytest.UpdateSteps(DaemonSetRules, changed, same); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if got := changed.Annotations[key]; got != "2" {
		t.Errorf("after a template change %s=%q, want 2", key, got)
	}
	given := &appsv1.DaemonSet{ObjectMeta: registrytest.ObjMeta("copied"), Spec: *ds.Spec.DeepCopy()}
	given.Annotations = map[string]string{key: "4"}
	if errs := registrytest.CreateSteps(DaemonSetRules, given); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if got := given.Annotations[key]; got != "4" {
		t.Errorf("created with %s=4: %q", key, got)
	}
}

// A new selector is refused as immutable before the spec's own checks, in kube-apiserver's
// order (ValidateDaemonSetUpdate: the selector, then ValidateDaemonSetSpec).
func TestDaemonSetSelectorChangeErrorOrder(t *testing.T) {
	old := &appsv1.DaemonSet{ObjectMeta: registrytest.ObjMeta("agent"), Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}, Template: registrytest.Template(map[string]string{"app": "agent"})}}
	DaemonSetRules.Default(old)
	ds := old.DeepCopy()
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	var got []string
	for _, e := range DaemonSetRules.ValidateUpdate(ds, old) {
		got = append(got, e.Field+": "+string(e.Type))
	}
	want := "spec.selector: FieldValueInvalid, spec.template.metadata.labels: FieldValueInvalid"
	if strings.Join(got, ", ") != want {
		t.Errorf("errors %q, want %q", got, want)
	}
}
