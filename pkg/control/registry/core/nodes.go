package core

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/internal/nodeaddr"
	"github.com/minik8s/minik8s/internal/resourcename"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/poddefaults"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

const nodeRolePrefix = "node-role.kubernetes.io/"

var NodeRules = registry.Rules{
	// A node may be created with its status; the retired configSource is dropped (kube's
	// dropDisabledFields), on update unless the node has it already.
	PrepareCreate: func(obj runtime.Object) {
		n := obj.(*corev1.Node)
		n.Spec.ConfigSource, n.Status.Config = nil, nil
	},
	PrepareUpdate: func(obj, old runtime.Object) {
		if old.(*corev1.Node).Spec.ConfigSource == nil {
			obj.(*corev1.Node).Spec.ConfigSource = nil
		}
	},
	Default: func(obj runtime.Object) {
		n := obj.(*corev1.Node)
		defaultPodCIDRs(&n.Spec)
		// kube's SetDefaults_NodeStatus: what the scheduler fits pods to is the capacity
		// unless the node says otherwise.
		if n.Status.Allocatable == nil && n.Status.Capacity != nil {
			n.Status.Allocatable = n.Status.Capacity.DeepCopy()
		}
		poddefaults.ResourceList(n.Status.Capacity)
		poddefaults.ResourceList(n.Status.Allocatable)
	},
	Warnings: func(obj, _ runtime.Object) []string { return nodeWarnings(obj.(*corev1.Node)) },
	Validate: func(obj runtime.Object) field.ErrorList { return validateNode(obj.(*corev1.Node)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		n := obj.(*corev1.Node)
		return append(validateNode(n), validateNodeUpdate(n, old.(*corev1.Node))...)
	},
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": {
		Prepare: func(obj, old runtime.Object) {
			if old.(*corev1.Node).Status.Config == nil {
				obj.(*corev1.Node).Status.Config = nil
			}
		},
		Validate: func(obj, old runtime.Object) field.ErrorList {
			return validateNodeUpdate(obj.(*corev1.Node), old.(*corev1.Node))
		},
	}},
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"spec.unschedulable": boolText(obj.(*corev1.Node).Spec.Unschedulable)}
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.Column("Name", "string", "Name of the node", false),
			registry.Column("Status", "string", "The status of the node", false),
			registry.Column("Roles", "string", "The roles of the node", false),
			registry.Column("Age", "string", "Time since creation", false),
			registry.Column("Version", "string", "Kubelet Version reported by the node.", false),
			registry.Column("Internal-IP", "string", "List of internal IPs for the node.", true),
			registry.Column("External-IP", "string", "List of external IPs for the node.", true),
			registry.Column("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 12 (bookworm)).", true),
			registry.Column("Kernel-Version", "string", "Kernel version reported by the node from 'uname -r'.", true),
			registry.Column("Container-Runtime", "string", "Container Runtime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).", true),
		},
		Row: func(obj runtime.Object) []any {
			n := obj.(*corev1.Node)
			info := n.Status.NodeInfo
			kernel := cmp.Or(info.KernelVersion, "<unknown>")
			if info.Architecture != "" {
				kernel += " (" + info.Architecture + ")"
			}
			return []any{n.Name, NodeStatusText(n), nodeRoles(n), registry.Age(n.CreationTimestamp), info.KubeletVersion,
				cmp.Or(nodeaddr.Of(n, corev1.NodeInternalIP), "<none>"), cmp.Or(nodeaddr.Of(n, corev1.NodeExternalIP), "<none>"),
				cmp.Or(info.OSImage, "<unknown>"), kernel, cmp.Or(info.ContainerRuntimeVersion, "<unknown>")}
		},
	},
}

// defaultPodCIDRs reconciles the two pod CIDR fields as kube's v1 conversion does: podCIDR
// wins when they differ and is always podCIDRs[0].
func defaultPodCIDRs(s *corev1.NodeSpec) {
	if s.PodCIDR != "" && (len(s.PodCIDRs) == 0 || s.PodCIDRs[0] != s.PodCIDR) {
		s.PodCIDRs = []string{s.PodCIDR}
	}
	if len(s.PodCIDRs) > 0 {
		s.PodCIDR = s.PodCIDRs[0]
	}
}

// validateNode is kube's ValidateNode: the spec, and the status only where it is set.
func validateNode(n *corev1.Node) field.ErrorList {
	errs := validation.ValidateObjectMeta(&n.ObjectMeta, false, validation.NameIsDNSSubdomain, field.NewPath("metadata"))
	// kube reports the spec's taints under metadata.taints.
	errs = append(errs, validateTaints(n.Spec.Taints, field.NewPath("metadata", "taints"))...)
	errs = append(errs, validateNodeResources(n)...)
	if swap := n.Status.NodeInfo.Swap; swap != nil && swap.Capacity != nil && *swap.Capacity <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "nodeSwapStatus", "capacity"), *swap.Capacity, "must be greater than zero"))
	}
	errs = append(errs, validateDeclaredFeatures(n.Status.DeclaredFeatures, field.NewPath("status", "declaredFeatures"))...)
	cidrs := field.NewPath("spec", "podCIDRs")
	for i, cidr := range n.Spec.PodCIDRs {
		errs = append(errs, utilvalidation.IsValidCIDRForLegacyField(cidrs.Index(i), cidr, true, nil)...)
	}
	if len(n.Spec.PodCIDRs) > 1 {
		dual, err := netutils.IsDualStackCIDRStrings(n.Spec.PodCIDRs)
		if err != nil {
			errs = append(errs, field.InternalError(cidrs, fmt.Errorf("invalid PodCIDRs. failed to check with dual stack with error:%v", err)))
		}
		if !dual || len(n.Spec.PodCIDRs) > 2 {
			errs = append(errs, field.Invalid(cidrs, n.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
		}
	}
	return errs
}

// validateNodeUpdate is what kube's ValidateNodeUpdate adds to ValidateNode (it is all an
// update of the status is checked against): distinct addresses, pod CIDRs and providerID
// set once, the configSource references well formed.
func validateNodeUpdate(n, old *corev1.Node) field.ErrorList {
	errs := validateNodeResources(n)
	errs = append(errs, validateDeclaredFeatures(n.Status.DeclaredFeatures, field.NewPath("status", "declaredFeatures"))...)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), internalNodeAddress{a.Type, a.Address}))
		}
		seen[a] = true
	}
	if len(old.Spec.PodCIDRs) > 0 && !slices.Equal(old.Spec.PodCIDRs, n.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), `node updates may not change podCIDR except from "" to valid`))
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != n.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), `node updates may not change providerID except from "" to valid`))
	}
	if n.Spec.ConfigSource != nil {
		errs = append(errs, validateNodeConfigSource(n.Spec.ConfigSource, false, field.NewPath("spec", "configSource"))...)
	}
	if c := n.Status.Config; c != nil {
		status := field.NewPath("status", "config")
		for _, s := range []struct {
			source *corev1.NodeConfigSource
			name   string
		}{{c.Assigned, "assigned"}, {c.Active, "active"}, {c.LastKnownGood, "lastKnownGood"}} {
			if s.source != nil {
				errs = append(errs, validateNodeConfigSource(s.source, true, status.Child(s.name))...)
			}
		}
	}
	if n.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}

var declaredFeatureName = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*$`)

// validateDeclaredFeatures is kube's validateNodeDeclaredFeatures (NodeDeclaredFeatures,
// beta in 1.36): the features a node declares are UpperCamelCase names, optionally with
// /sub-features, listed once each in sorted order, so the scheduler can search them.
func validateDeclaredFeatures(features []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range features {
		switch {
		case len(f) > utilvalidation.DNS1123SubdomainMaxLength:
			errs = append(errs, field.Invalid(path.Index(i), f, fmt.Sprintf("invalid feature name %q: must be no more than %d characters", f, utilvalidation.DNS1123SubdomainMaxLength)))
		case !declaredFeatureName.MatchString(f):
			errs = append(errs, field.Invalid(path.Index(i), f, fmt.Sprintf("invalid feature name %q: must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes", f)))
		}
		if i+1 < len(features) {
			switch next := features[i+1]; {
			case f == next:
				errs = append(errs, field.Duplicate(path.Index(i+1), next))
			case f > next:
				errs = append(errs, field.Invalid(path.Index(i+1), next, "list must be sorted alphabetically"))
			}
		}
	}
	return errs
}

// validateTaints is kube's validateNodeTaints: qualified keys, label values, a known
// effect, each key and effect once.
func validateTaints(taints []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[keyEffect]bool{}
	for i, t := range taints {
		p := path.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := utilvalidation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		case "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect,
				[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
		k := keyEffect{t.Key, t.Effect}
		if seen[k] {
			dup := field.Duplicate(p, internalTaint{t.Key, t.Value, t.Effect, t.TimeAdded})
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		seen[k] = true
	}
	return errs
}

// validateNodeResources is kube's ValidateNodeResources: capacity and allocatable are not
// negative, and whole numbers where the resource is counted.
func validateNodeResources(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name      string
		resources corev1.ResourceList
	}{{"capacity", n.Status.Capacity}, {"allocatable", n.Status.Allocatable}} {
		for _, name := range slices.Sorted(maps.Keys(list.resources)) {
			q, p := list.resources[name], field.NewPath("status", list.name, string(name))
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
			}
			if resourcename.IsInteger(name) && q.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(p, q, "must be an integer"))
			}
		}
	}
	return errs
}

// validateNodeConfigSource checks a reference to the retired dynamic kubelet config: in
// the spec without uid and resourceVersion, in the status with both.
func validateNodeConfigSource(s *corev1.NodeConfigSource, inStatus bool, path *field.Path) field.ErrorList {
	if s.ConfigMap == nil {
		return field.ErrorList{field.Invalid(path, s, "exactly one reference subfield must be non-nil")}
	}
	var errs field.ErrorList
	cm, p := s.ConfigMap, path.Child("configMap")
	switch {
	case inStatus && cm.UID == "":
		errs = append(errs, field.Required(p.Child("uid"), ""))
	case !inStatus && cm.UID != "":
		errs = append(errs, field.Forbidden(p.Child("uid"), "uid must not be set in spec"))
	}
	switch {
	case inStatus && cm.ResourceVersion == "":
		errs = append(errs, field.Required(p.Child("resourceVersion"), ""))
	case !inStatus && cm.ResourceVersion != "":
		errs = append(errs, field.Forbidden(p.Child("resourceVersion"), "resourceVersion must not be set in spec"))
	}
	for _, f := range []struct {
		name, value string
		check       func(string) []string
	}{
		{"namespace", cm.Namespace, func(v string) []string { return validation.ValidateNamespaceName(v, false) }},
		{"name", cm.Name, func(v string) []string { return validation.NameIsDNSSubdomain(v, false) }},
		{"kubeletConfigKey", cm.KubeletConfigKey, utilvalidation.IsConfigMapKey},
	} {
		if f.value == "" {
			errs = append(errs, field.Required(p.Child(f.name), ""))
			continue
		}
		errs = append(errs, corevalidation.InvalidEach(p.Child(f.name), f.value, f.check(f.value))...)
	}
	return errs
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

// internalNodeAddress and internalTaint are kube's internal core types, the values its
// duplicate errors show: without JSON tags, a struct prints its Go field names.
type internalNodeAddress struct {
	Type    corev1.NodeAddressType
	Address string
}

type internalTaint struct {
	Key       string
	Value     string
	Effect    corev1.TaintEffect
	TimeAdded *metav1.Time
}

// nodeWarnings are kube's node strategy's, in its words.
func nodeWarnings(n *corev1.Node) []string {
	var out []string
	if n.Spec.ConfigSource != nil {
		out = append(out, "spec.configSource: the feature is removed")
	}
	if n.Spec.DoNotUseExternalID != "" {
		out = append(out, "spec.externalID: this field is deprecated, and is unused by Kubernetes")
	}
	for i, cidr := range n.Spec.PodCIDRs {
		out = append(out, utilvalidation.GetWarningsForCIDR(field.NewPath("spec", "podCIDRs").Index(i), cidr)...)
	}
	return out
}
