package node

import (
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestRuntimeClassRules(t *testing.T) {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}
	registrytest.ExpectErrors(t, "runtime class", registrytest.CreateSteps(RuntimeClassRules, rc))
	if w := RuntimeClassRules.Warnings(rc, nil); len(w) != 1 {
		t.Errorf("a RuntimeClass minilet does not act on must be warned of: %v", w)
	}
	if row := RuntimeClassRules.Table.Row(rc); row[1] != "runsc" {
		t.Errorf("runtime class row: %v", row)
	}
	bad := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Handler: "Not_A_Label",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}}
	// As kube: the overhead checked as a container's limits, the scheduling's tolerations as
	// a pod's and each once.
	bad.Scheduling = &nodev1.Scheduling{Tolerations: []corev1.Toleration{
		{Key: "a", Operator: corev1.TolerationOpExists, Value: "b"},
		{Key: "c", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, {Key: "c", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](1), Effect: corev1.TaintEffectNoExecute},
	}}
	registrytest.ExpectErrors(t, "bad runtime class", registrytest.CreateSteps(RuntimeClassRules, bad), "handler: FieldValueInvalid",
		"overhead.limits[cpu]: FieldValueInvalid", "scheduling.tolerations[0].operator: FieldValueInvalid", "scheduling.tolerations[2]: FieldValueDuplicate")
	if errs := registrytest.CreateSteps(RuntimeClassRules, bad); !strings.Contains(errs.ToAggregate().Error(), `Duplicate value: {"Key":"c","Operator":"Exists","Value":"","Effect":"NoExecute","TolerationSeconds":1}`) {
		t.Errorf("a duplicate toleration is not printed as kube prints it: %v", errs)
	}
	bad = &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}
	registrytest.ExpectErrors(t, "no handler", registrytest.CreateSteps(RuntimeClassRules, bad), "handler: FieldValueRequired")
	changed := rc.DeepCopy()
	changed.Handler = "kata"
	registrytest.ExpectErrors(t, "changed handler", registrytest.UpdateSteps(RuntimeClassRules, changed, rc), "handler: FieldValueInvalid")
}
