package registry

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Columns many kinds' tables share.

var (
	NameColumn = Column("Name", "string", metav1.ObjectMeta{}.SwaggerDoc()["name"], false)
	AgeColumn  = Column("Age", "string", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], false)
)

// IntegerColumn is a column of integers.
func IntegerColumn(name, desc string) metav1.TableColumnDefinition {
	return Column(name, "integer", desc, false)
}

// CreatedAtTable is what Kubernetes shows for kinds without their own columns (roles,
// limit ranges): the name and the creation time.
var CreatedAtTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{
		NameColumn,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Row: func(obj runtime.Object) []any {
		m := MetaOf(obj)
		return []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
	},
}

// StringOr is *s, or otherwise when s is nil.
func StringOr(s *string, otherwise string) string {
	if s == nil {
		return otherwise
	}
	return *s
}
