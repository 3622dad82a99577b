package apiserver

import (
	"encoding/json"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// buildTable renders objects as the metav1.Table `kubectl get` prints. Each row carries the
// object's metadata (or the whole object with ?includeObject=Object) so kubectl can add the
// NAMESPACE and LABELS columns itself.
func buildTable(r *http.Request, res *registry.Resource, objs []runtime.Object, lm metav1.ListMeta) (*metav1.Table, error) {
	def := res.Rules.Table
	if def == nil {
		def = registry.DefaultTable
	}
	table := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta:          lm,
		ColumnDefinitions: def.Columns,
		Rows:              make([]metav1.TableRow, 0, len(objs)),
	}
	include := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
	for _, obj := range objs {
		row := metav1.TableRow{Cells: def.Row(obj)}
		switch include {
		case metav1.IncludeNone:
		case metav1.IncludeObject:
			raw, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		default:
			pom := &metav1.PartialObjectMetadata{
				TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			}
			pom.ObjectMeta = *objectMeta(obj)
			pom.ManagedFields = nil
			raw, err := json.Marshal(pom)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}
