package core

import (
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/autoscaling"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestTableColumnsAsKube: the columns of `kubectl get` (a * marks an -o wide one, a
// :type follows a column that is not a string) are kube-apiserver v1.36's
// (pkg/printers/internalversion/printers.go), the name column formatted as a name, and a
// row has a cell per column.
func TestTableColumnsAsKube(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		table *registry.TableDef
		obj   runtime.Object
		want  string
	}{
		// v1.36 has no SECRETS column: token Secrets are no longer listed in a ServiceAccount.
		{"ServiceAccount", ServiceAccountRules.Table, &corev1.ServiceAccount{ObjectMeta: registrytest.ObjMeta("sa")}, "Name Age"},
		{"PodTemplate", PodTemplateRules.Table, &corev1.PodTemplate{ObjectMeta: registrytest.ObjMeta("pt")}, "Name Containers Images Pod-Labels"},
		// MinPods is "<unset>" without spec.minReplicas: kube types all three as strings.
		{"HorizontalPodAutoscaler", autoscaling.HPARules.Table, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: registrytest.ObjMeta("hpa")},
			"Name Reference Targets MinPods MaxPods Replicas Age"},
	} {
		var names []string
		for _, c := range tc.table.Columns {
			n := strings.ReplaceAll(c.Name, " ", "-")
			if c.Priority == 1 {
				n += "*"
			}
			if c.Type != "string" {
				n += ":" + c.Type
			}
			names = append(names, n)
			if c.Name == "Name" && c.Format != "name" {
				t.Errorf("%s: the Name column's format is %q, not name", tc.kind, c.Format)
			}
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%s columns: got %q, want %q", tc.kind, got, tc.want)
		}
		if row := tc.table.Row(tc.obj); len(row) != len(tc.table.Columns) {
			t.Errorf("%s: %d cells for %d columns: %v", tc.kind, len(row), len(tc.table.Columns), row)
		}
	}
}
