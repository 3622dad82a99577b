package registry

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What the API server does to a new object, minus storage: reset, default, validate.
func createSteps(r Rules, obj runtime.Object) field.ErrorList {
	if r.PrepareCreate != nil {
		r.PrepareCreate(obj)
	}
	if r.Default != nil {
		r.Default(obj)
	}
	return r.Validate(obj)
}

// What it does to an update (for the spec: status handling is the server's).
func updateSteps(r Rules, obj, old runtime.Object) field.ErrorList {
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

// expectErrors checks that errs are exactly want ("field: type"), in any order.
func expectErrors(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	got := errorsText(errs)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: errors %q, want %q\n%v", what, got, want, errs.ToAggregate())
	}
}

// expectMessage checks that some error names field and says msg.
func expectMessage(t *testing.T, errs field.ErrorList, fieldPath, msg string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == fieldPath && strings.Contains(e.Error(), msg) {
			return
		}
	}
	t.Errorf("no error on %s saying %q in %v", fieldPath, msg, errs.ToAggregate())
}

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default"}
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

func TestBuiltinNamesAndCategories(t *testing.T) {
	reg, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"services": "svc", "deployments": "deploy", "replicasets": "rs", "statefulsets": "sts",
		"daemonsets": "ds", "replicationcontrollers": "rc", "cronjobs": "cj", "endpoints": "ep", "persistentvolumes": "pv",
		"persistentvolumeclaims": "pvc", "resourcequotas": "quota", "limitranges": "limits", "poddisruptionbudgets": "pdb",
		"priorityclasses": "pc", "configmaps": "cm", "serviceaccounts": "sa", "horizontalpodautoscalers": "hpa", "volumeattributesclasses": "vac"}
	all := map[string]bool{}
	for _, r := range reg.Resources() {
		if short, ok := want[r.Resource]; ok && !slices.Contains(r.ShortNames, short) {
			t.Errorf("%s: short names %v lack %q", r.GroupVersionResource, r.ShortNames, short)
		}
		if slices.Contains(r.Categories, "all") {
			all[r.Resource] = true
		}
		if r.HasSubresource("scale") != (r.Rules.Scale != nil) {
			t.Errorf("%s: a scale subresource needs scale rules and the reverse", r.GroupVersionResource)
		}
		if r.Rules.Table == nil {
			t.Errorf("%s has no table columns", r.GroupVersionResource)
		}
	}
	for _, r := range []string{"pods", "services", "deployments", "replicasets", "statefulsets", "daemonsets", "replicationcontrollers", "jobs", "cronjobs", "horizontalpodautoscalers"} {
		if !all[r] {
			t.Errorf("%s is not in the \"all\" category", r)
		}
	}
	if len(all) != 10 {
		t.Errorf("the \"all\" category has %d resources, want 10: %v", len(all), all)
	}
}

// Every table row has one cell per column, since kubectl matches them by position.
func TestTableRowsMatchColumns(t *testing.T) {
	reg, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.Resources() {
		obj, err := r.New()
		if err != nil {
			t.Fatal(err)
		}
		metaOf(obj).SetName("x")
		if n, cols := len(r.Rules.Table.Row(obj)), len(r.Rules.Table.Columns); n != cols {
			t.Errorf("%s: a row has %d cells for %d columns", r.GroupVersionResource, n, cols)
		}
	}
}
