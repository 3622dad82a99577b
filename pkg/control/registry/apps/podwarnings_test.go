package apps

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The warnings kube-apiserver v1.36 sent for these workloads, in its order.
func TestWorkloadWarningsAsKubernetes(t *testing.T) {
	d := registrytest.Deployment(map[string]string{"app": "web"})
	d.Name = "pw.dep"
	tmpl := &d.Spec.Template
	tmpl.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-5)
	tmpl.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/master": ""}
	tmpl.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}, {ContainerPort: 80, HostPort: 80, HostIP: "1.2.3.4"}}
	if errs := registrytest.CreateSteps(DeploymentRules, d); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	want := []string{
		"metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]",
		`spec.template.spec.nodeSelector[node-role.kubernetes.io/master]: use "node-role.kubernetes.io/control-plane" instead`,
		`spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: deprecated since v1.30; use the "appArmorProfile" field instead`,
		"spec.template.spec.containers[0].ports[1]: dangerously ambiguous port definition with spec.template.spec.containers[0].ports[0]",
		"spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1",
	}
	if got := DeploymentRules.Warnings(d, nil); !slices.Equal(got, want) {
		t.Errorf("deployment warnings\n%q\nwant\n%q", got, want)
	}

	s := &appsv1.StatefulSet{ObjectMeta: registrytest.ObjMeta("db"), Spec: appsv1.StatefulSetSpec{Template: registrytest.Template(nil)}}
	s.Spec.RevisionHistoryLimit = ptr.To[int32](-1)
	s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{Spec: corev1.PersistentVolumeClaimSpec{
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1500m")}}}}}
	want = []string{
		`spec.volumeClaimTemplates[0].resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		"spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended",
	}
	if got := StatefulSetRules.Warnings(s, nil); !slices.Equal(got, want) {
		t.Errorf("statefulset warnings\n%q\nwant\n%q", got, want)
	}
}

// On update, kube's StatefulSet strategy warns of the template only with a new generation,
// but of the claim templates (naming their spec "Spec") and the history limit every time.
func TestStatefulSetWarningsOnUpdate(t *testing.T) {
	s := &appsv1.StatefulSet{ObjectMeta: registrytest.ObjMeta("db"), Spec: appsv1.StatefulSetSpec{Template: registrytest.Template(nil)}}
	s.Generation = 2
	s.Spec.RevisionHistoryLimit = ptr.To[int32](-1)
	s.Spec.Template.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/master": ""}
	s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{Spec: corev1.PersistentVolumeClaimSpec{
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1500m")}}}}}
	old := s.DeepCopy()
	always := []string{
		`spec.volumeClaimTemplates[0].Spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		"spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended",
	}
	if got := StatefulSetRules.Warnings(s, old); !slices.Equal(got, always) {
		t.Errorf("same generation\n%q\nwant\n%q", got, always)
	}
	s.Generation = 3
	want := append([]string{`spec.template.spec.nodeSelector[node-role.kubernetes.io/master]: use "node-role.kubernetes.io/control-plane" instead`}, always...)
	if got := StatefulSetRules.Warnings(s, old); !slices.Equal(got, want) {
		t.Errorf("new generation\n%q\nwant\n%q", got, want)
	}
}
