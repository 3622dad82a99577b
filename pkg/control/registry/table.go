package registry

import (
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// TableDef describes the columns `kubectl get` shows for a kind and how to fill a row.
// Columns with Priority 1 appear only with `-o wide`.
type TableDef struct {
	Columns []metav1.TableColumnDefinition
	Row     func(obj runtime.Object) []any
}

// DefaultTable is what a kind without its own columns shows, as in Kubernetes.
var DefaultTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Row: func(obj runtime.Object) []any {
		m := MetaOf(obj)
		return []any{m.GetName(), Age(m.GetCreationTimestamp())}
	},
}

// Age renders a timestamp the way kubectl's AGE column does ("5m", "2d3h", "<unknown>").
func Age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// Column is a table column: a wide one shows only with `-o wide` (priority 1), the Name
// column is formatted as a name.
func Column(name, typ, desc string, wide bool) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
	if name == "Name" {
		c.Format = "name"
	}
	if wide {
		c.Priority = 1
	}
	return c
}

// ScaleTable is what `kubectl get --subresource=scale` shows of an autoscaling/v1 Scale.
var ScaleTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		IntegerColumn("Desired", autoscalingv1.ScaleSpec{}.SwaggerDoc()["replicas"]),
		IntegerColumn("Available", autoscalingv1.ScaleStatus{}.SwaggerDoc()["replicas"]),
		AgeColumn,
	},
	Row: func(obj runtime.Object) []any {
		s := obj.(*autoscalingv1.Scale)
		return []any{s.Name, int64(s.Spec.Replicas), int64(s.Status.Replicas), Age(s.CreationTimestamp)}
	},
}
