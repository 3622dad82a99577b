// Package rbac holds the rules of the rbac.authorization.k8s.io/v1 kinds: Roles,
// ClusterRoles and their bindings, as Kubernetes' pkg/registry/rbac has them.
package rbac

import (
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RBAC objects are validated as kube-apiserver's rbac validation does; package auth
// enforces them (and guards their writes against escalation).

var RoleRules = registry.Rules{
	Validate: func(obj runtime.Object) field.ErrorList {
		r := obj.(*rbacv1.Role)
		return append(registry.ValidateMeta(r, true, path.ValidatePathSegmentName), validatePolicyRules(r.Rules, true)...)
	},
	Table: registry.CreatedAtTable,
}

var ClusterRoleRules = registry.Rules{
	Validate: func(obj runtime.Object) field.ErrorList {
		r := obj.(*rbacv1.ClusterRole)
		errs := append(registry.ValidateMeta(r, false, path.ValidatePathSegmentName), validatePolicyRules(r.Rules, false)...)
		if r.AggregationRule == nil {
			return errs
		}
		// The aggregation controller fills the rules in from the roles the selectors match.
		selectors := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(selectors, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&r.AggregationRule.ClusterRoleSelectors[i],
				metav1validation.LabelSelectorValidationOptions{}, selectors.Index(i))...)
		}
		return errs
	},
	Table: registry.CreatedAtTable,
}

// validatePolicyRules is kube-apiserver's ValidatePolicyRule on each rule; a Role's
// (namespaced) may not name non-resource URLs.
func validatePolicyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		p := field.NewPath("rules").Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

var RoleBindingRules = bindingRules(func(obj runtime.Object) (*rbacv1.RoleRef, []rbacv1.Subject) {
	b := obj.(*rbacv1.RoleBinding)
	return &b.RoleRef, b.Subjects
}, true, "Role", "ClusterRole")

var ClusterRoleBindingRules = bindingRules(func(obj runtime.Object) (*rbacv1.RoleRef, []rbacv1.Subject) {
	b := obj.(*rbacv1.ClusterRoleBinding)
	return &b.RoleRef, b.Subjects
}, false, "ClusterRole")

// bindingRules are the Rules of a RoleBinding or a ClusterRoleBinding, the same apart from
// their scope and the kinds of role they may name: parts reaches a binding's roleRef and
// subjects.
func bindingRules(parts func(runtime.Object) (*rbacv1.RoleRef, []rbacv1.Subject), namespaced bool, kinds ...string) registry.Rules {
	return registry.Rules{
		Default: func(obj runtime.Object) {
			defaultBinding(parts(obj))
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			ref, subjects := parts(obj)
			errs := registry.ValidateMeta(obj, namespaced, path.ValidatePathSegmentName)
			return append(errs, validateBinding(*ref, subjects, namespaced, kinds...)...)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			ref, subjects := parts(obj)
			oldRef, _ := parts(old)
			errs := registry.ValidateMeta(obj, namespaced, path.ValidatePathSegmentName)
			return append(errs, validateBindingUpdate(*ref, *oldRef, subjects, namespaced, kinds...)...)
		},
		Table: bindingTable(parts),
	}
}

func validateBindingUpdate(ref, oldRef rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool, kinds ...string) field.ErrorList {
	errs := validateBinding(ref, subjects, namespaced, kinds...)
	if ref != oldRef {
		errs = append(errs, field.Invalid(field.NewPath("roleRef"), registry.GoNamed{V: ref}, "cannot change roleRef"))
	}
	return errs
}

// defaultBinding fills in the API groups a binding may leave out, as Kubernetes' rbac/v1
// defaulters do: rbac.authorization.k8s.io for the roleRef and for User and Group subjects.
func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		if s := &subjects[i]; s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// validateBinding is kube's ValidateRoleBinding or ValidateClusterRoleBinding: a
// ClusterRoleBinding's ServiceAccount subjects name their namespace.
func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool, kinds ...string) field.ErrorList {
	var errs field.ErrorList
	rp := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(rp.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(rp.Child("name"), ""))
	} else {
		errs = append(errs, corevalidation.InvalidEach(rp.Child("name"), ref.Name, path.ValidatePathSegmentName(ref.Name, false))...)
	}
	subjectKinds := []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}
	for i, s := range subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				errs = append(errs, corevalidation.InvalidEach(p.Child("name"), s.Name, validation.ValidateServiceAccountName(s.Name, false))...)
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, subjectKinds))
		}
	}
	return errs
}

func bindingTable(parts func(runtime.Object) (*rbacv1.RoleRef, []rbacv1.Subject)) *registry.TableDef {
	return &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"], false),
			registry.AgeColumn,
			registry.Column("Users", "string", "Users in the roleBinding", true),
			registry.Column("Groups", "string", "Groups in the roleBinding", true),
			registry.Column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", true),
		},
		Row: func(obj runtime.Object) []any {
			ref, subjects := parts(obj)
			var users, groups, sas []string
			for _, s := range subjects {
				switch s.Kind {
				case rbacv1.UserKind:
					users = append(users, s.Name)
				case rbacv1.GroupKind:
					groups = append(groups, s.Name)
				case rbacv1.ServiceAccountKind:
					sas = append(sas, s.Namespace+"/"+s.Name)
				}
			}
			m := registry.MetaOf(obj)
			return []any{m.GetName(), ref.Kind + "/" + ref.Name, registry.Age(m.GetCreationTimestamp()),
				strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
		},
	}
}
