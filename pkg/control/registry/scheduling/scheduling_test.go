package scheduling

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPriorityClassRules(t *testing.T) {
	for _, pc := range SystemPriorityClasses() {
		if errs := registrytest.CreateSteps(PriorityClassRules, pc); len(errs) > 0 {
			t.Errorf("%s: %v", pc.Name, errs.ToAggregate())
		}
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 5}
	registrytest.ExpectErrors(t, "system- prefix", registrytest.CreateSteps(PriorityClassRules, pc), "metadata.name: FieldValueForbidden")
	pc = &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Value: 2000000000}
	registrytest.ExpectErrors(t, "above user range", registrytest.CreateSteps(PriorityClassRules, pc), "value: FieldValueForbidden")
	pc = &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	if errs := registrytest.CreateSteps(PriorityClassRules, pc); len(errs) > 0 || *pc.PreemptionPolicy != corev1.PreemptLowerPriority || pc.Generation != 1 {
		t.Errorf("user class: %v %v generation %d", errs.ToAggregate(), pc.PreemptionPolicy, pc.Generation)
	}
	changed := pc.DeepCopy()
	changed.Value = 2000
	registrytest.ExpectErrors(t, "new value", registrytest.UpdateSteps(PriorityClassRules, changed, pc), "value: FieldValueForbidden")
}
