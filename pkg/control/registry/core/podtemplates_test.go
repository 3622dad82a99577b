package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
)

// TestPodTemplateRules: a PodTemplate's template is defaulted as a pod's (restart policy,
// pull policy), any pod restart policy is allowed, and a template without containers or
// with a bad label is refused naming the field under template.
func TestPodTemplateRules(t *testing.T) {
	pt := &corev1.PodTemplate{ObjectMeta: registrytest.ObjMeta("tmpl"), Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}}
	if errs := registrytest.CreateSteps(PodTemplateRules, pt); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if pt.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || pt.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("template not defaulted: %+v", pt.Template.Spec)
	}
	never := pt.DeepCopy()
	never.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if errs := registrytest.CreateSteps(PodTemplateRules, never); len(errs) > 0 {
		t.Errorf("restartPolicy Never refused: %v", errs.ToAggregate())
	}
	bad := &corev1.PodTemplate{ObjectMeta: registrytest.ObjMeta("bad"), Template: corev1.PodTemplateSpec{}}
	bad.Template.Labels = map[string]string{"a b": "c"}
	registrytest.ExpectErrors(t, "empty template", registrytest.CreateSteps(PodTemplateRules, bad),
		"template.spec.containers: FieldValueRequired", "template.labels: FieldValueInvalid")
	if row := PodTemplateRules.Table.Row(pt); row[0] != "tmpl" || row[1] != "c" || row[2] != "busybox:1" {
		t.Errorf("row: %v", row)
	}
	for _, c := range PodTemplateRules.Table.Columns {
		if c.Priority != 0 {
			t.Errorf("column %s is shown only with -o wide; kubectl get podtemplates shows every column", c.Name)
		}
	}
}
