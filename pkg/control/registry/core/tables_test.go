package core

import (
	"fmt"
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

// The -o wide cells of a node as kube v1.36's printNode writes them: "<unknown>" for what
// the node has not reported, its architecture after the kernel version.
func TestNodeWideCells(t *testing.T) {
	n := &corev1.Node{}
	n.Name = "n1"
	if got := fmt.Sprint(NodeRules.Table.Row(n)[7:]); got != "[<unknown> <unknown> <unknown>]" {
		t.Errorf("a node that reported nothing: %s", got)
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{OSImage: "Debian GNU/Linux 12 (bookworm)", KernelVersion: "6.1.0", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.1.4"}
	if got := fmt.Sprint(NodeRules.Table.Row(n)[7:]); got != "[Debian GNU/Linux 12 (bookworm) 6.1.0 (amd64) containerd://2.1.4]" {
		t.Errorf("a reported node: %s", got)
	}
}
