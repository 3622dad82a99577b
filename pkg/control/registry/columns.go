package registry

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Columns many kinds' tables share.

var (
	nameColumn = column("Name", "string", metav1.ObjectMeta{}.SwaggerDoc()["name"], false)
	ageColumn  = column("Age", "string", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], false)
)

func integerColumn(name, desc string) metav1.TableColumnDefinition {
	return column(name, "integer", desc, false)
}

// createdAtTable is what Kubernetes shows for kinds without their own columns (roles,
// limit ranges): the name and the creation time.
var createdAtTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Row: func(obj runtime.Object) []any {
		m := metaOf(obj)
		return []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
	},
}
