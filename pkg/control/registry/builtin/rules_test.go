package builtin

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
)

func TestBuiltinNamesAndCategories(t *testing.T) {
	reg, err := Registry()
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
	reg, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.Resources() {
		obj, err := r.New()
		if err != nil {
			t.Fatal(err)
		}
		registry.MetaOf(obj).SetName("x")
		if n, cols := len(r.Rules.Table.Row(obj)), len(r.Rules.Table.Columns); n != cols {
			t.Errorf("%s: a row has %d cells for %d columns", r.GroupVersionResource, n, cols)
		}
	}
}
