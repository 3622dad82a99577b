package core

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ComponentStatuses is core/v1 componentstatuses (`kubectl get cs`): not stored, made at each
// read from the health of the control plane's parts. Until the control plane says how to
// check them, there are none.
func ComponentStatuses() *registry.Resource {
	r := registry.NewResource(corev1.SchemeGroupVersion, "componentstatuses", "ComponentStatus", false, componentStatusRules, []string{"cs"}, nil)
	r.Computed = func(context.Context) ([]runtime.Object, error) { return nil, nil }
	return r
}

// componentStatusRules prints kube-apiserver's columns for a ComponentStatus.
var componentStatusRules = registry.Rules{
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{registry.NameColumn,
			registry.Column("Status", "string", "Status of the component conditions", false),
			registry.Column("Message", "string", "Message of the component conditions", false),
			registry.Column("Error", "string", "Error of the component conditions", false),
		},
		Row: func(obj runtime.Object) []any {
			cs := obj.(*corev1.ComponentStatus)
			status, message, errMsg := "Unknown", "", ""
			for _, c := range cs.Conditions {
				if c.Type != corev1.ComponentHealthy {
					continue
				}
				status = "Unhealthy"
				if c.Status == corev1.ConditionTrue {
					status = "Healthy"
				}
				message, errMsg = c.Message, c.Error
				break
			}
			return []any{cs.Name, status, message, errMsg}
		},
	},
}
