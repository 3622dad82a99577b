// Package registrytest holds what the tests of the registry's group packages share: the
// steps the API server takes on a create or an update, matchers of validation errors, and
// small objects to validate.
package registrytest

import (
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CreateSteps is what the API server does to a new object, minus storage: reset, default, validate.
func CreateSteps(r registry.Rules, obj runtime.Object) field.ErrorList {
	if r.PrepareCreate != nil {
		r.PrepareCreate(obj)
	}
	if r.Default != nil {
		r.Default(obj)
	}
	return r.Validate(obj)
}

// UpdateSteps is what it does to an update (for the spec: status handling is the server's).
func UpdateSteps(r registry.Rules, obj, old runtime.Object) field.ErrorList {
	if r.PrepareUpdate != nil {
		r.PrepareUpdate(obj, old)
	}
	if r.Default != nil {
		r.Default(obj)
	}
	if r.ValidateUpdate != nil {
		return r.ValidateUpdate(obj, old)
	}
	return r.Validate(obj)
}

// errorsText lists errors as "field: type" for matching.
func errorsText(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field+": "+string(e.Type))
	}
	return out
}

// ExpectErrors checks that errs are exactly want ("field: type"), in any order.
func ExpectErrors(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	got := errorsText(errs)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: errors %q, want %q\n%v", what, got, want, errs.ToAggregate())
	}
}

// ExpectErrorsInOrder checks that errs are exactly want ("field: type"), in that order.
func ExpectErrorsInOrder(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	if got := errorsText(errs); !slices.Equal(got, want) {
		t.Errorf("%s: errors\n%q, want\n%q", what, got, want)
	}
}

// ExpectMessage checks that some error names field and says msg.
func ExpectMessage(t *testing.T, errs field.ErrorList, fieldPath, msg string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == fieldPath && strings.Contains(e.Error(), msg) {
			return
		}
	}
	t.Errorf("no error on %s saying %q in %v", fieldPath, msg, errs.ToAggregate())
}

// ExpectMessages checks errs' messages, in order.
func ExpectMessages(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Error()
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: errors\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// ObjMeta is the metadata of an object named name in namespace default.
func ObjMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default"}
}

// Template is a pod template of one busybox container, with labels.
func Template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

// Deployment is a Deployment "web" selecting app=web, of a Template with labels.
func Deployment(labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: ObjMeta("web"), Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: Template(labels),
	}}
}

// Messages are errs as their Error strings, for comparing a validation's errors with kube's.
func Messages[E interface{ Error() string }](errs []E) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
