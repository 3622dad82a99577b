package registry

import (
	"cmp"
	"sort"
	"strings"

	"github.com/minik8s/minik8s/internal/nodeaddr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const nodeRolePrefix = "node-role.kubernetes.io/"

var nodeRules = Rules{
	Validate: func(obj runtime.Object) field.ErrorList {
		n := obj.(*corev1.Node)
		return validation.ValidateObjectMeta(&n.ObjectMeta, false, validation.NameIsDNSSubdomain, field.NewPath("metadata"))
	},
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"spec.unschedulable": boolText(obj.(*corev1.Node).Spec.Unschedulable)}
	},
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{
			column("Name", "string", "Name of the node", false),
			column("Status", "string", "The status of the node", false),
			column("Roles", "string", "The roles of the node", false),
			column("Age", "string", "Time since creation", false),
			column("Version", "string", "Kubelet Version reported by the node.", false),
			column("Internal-IP", "string", "List of internal IPs for the node.", true),
			column("External-IP", "string", "List of external IPs for the node.", true),
			column("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 12 (bookworm)).", true),
			column("Kernel-Version", "string", "Kernel version reported by the node from 'uname -r'.", true),
			column("Container-Runtime", "string", "Container Runtime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).", true),
		},
		Row: func(obj runtime.Object) []any {
			n := obj.(*corev1.Node)
			info := n.Status.NodeInfo
			return []any{n.Name, NodeStatusText(n), nodeRoles(n), Age(n.CreationTimestamp), info.KubeletVersion,
				cmp.Or(nodeaddr.Of(n, corev1.NodeInternalIP), "<none>"), cmp.Or(nodeaddr.Of(n, corev1.NodeExternalIP), "<none>"),
				info.OSImage, info.KernelVersion, info.ContainerRuntimeVersion}
		},
	},
}

// NodeStatusText is the STATUS column of `kubectl get nodes`, as Kubernetes' printer has it:
// Ready, NotReady for a Ready condition False or Unknown, Unknown without one.
func NodeStatusText(n *corev1.Node) string {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

func nodeRoles(n *corev1.Node) string {
	var roles []string
	for k := range n.Labels {
		if strings.HasPrefix(k, nodeRolePrefix) && len(k) > len(nodeRolePrefix) {
			roles = append(roles, strings.TrimPrefix(k, nodeRolePrefix))
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	sort.Strings(roles)
	return strings.Join(roles, ",")
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
