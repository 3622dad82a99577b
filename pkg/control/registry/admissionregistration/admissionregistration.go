// Package admissionregistration holds the rules of the admissionregistration.k8s.io/v1
// kinds: mutating and validating webhook configurations, and validating and mutating
// admission policies and their bindings, as Kubernetes' pkg/registry/admissionregistration
// has them.
package admissionregistration

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// The admissionregistration.k8s.io/v1 kinds: webhook configurations and
// ValidatingAdmissionPolicies with their bindings, defaulted and validated as
// Kubernetes' pkg/apis/admissionregistration does (the checks a client meets; the CEL
// expressions are compiled by the admission plugins that run them).

var (
	MutatingWebhookConfigurationRules = registry.Rules{
		Warnings: staticSuffixWarnings,
		// A configuration has no spec: its generation counts changes to its webhooks, as
		// kube's strategies count them.
		GenerationChanged: func(obj, old runtime.Object) bool {
			return !reflect.DeepEqual(obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks, old.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks)
		},
		Default: func(obj runtime.Object) {
			for i := range obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks {
				w := &obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks[i]
				defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
				if w.ReinvocationPolicy == nil {
					never := admissionregistrationv1.NeverReinvocationPolicy
					w.ReinvocationPolicy = &never
				}
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
			errs := registry.ValidateMeta(c, false, validation.NameIsDNSSubdomain)
			names := sets.New[string]()
			for i, w := range c.Webhooks {
				p := field.NewPath("webhooks").Index(i)
				errs = append(errs, validateWebhook(names, p, w.Name, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects,
					w.TimeoutSeconds, w.AdmissionReviewVersions, w.ClientConfig, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions, w.ReinvocationPolicy)...)
			}
			return errs
		},
		Table: webhookConfigurationTable(func(obj runtime.Object) (string, int) {
			c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
			return c.Name, len(c.Webhooks)
		}),
	}

	ValidatingWebhookConfigurationRules = registry.Rules{
		Warnings: staticSuffixWarnings,
		GenerationChanged: func(obj, old runtime.Object) bool {
			return !reflect.DeepEqual(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks, old.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks)
		},
		Default: func(obj runtime.Object) {
			for i := range obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks {
				w := &obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[i]
				defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
			errs := registry.ValidateMeta(c, false, validation.NameIsDNSSubdomain)
			names := sets.New[string]()
			for i, w := range c.Webhooks {
				errs = append(errs, validateWebhook(names, field.NewPath("webhooks").Index(i), w.Name, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects,
					w.TimeoutSeconds, w.AdmissionReviewVersions, w.ClientConfig, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions, nil)...)
			}
			return errs
		},
		Table: webhookConfigurationTable(func(obj runtime.Object) (string, int) {
			c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
			return c.Name, len(c.Webhooks)
		}),
	}

	ValidatingAdmissionPolicyRules = registry.Rules{
		Warnings:       staticSuffixWarnings,
		StatusMetadata: metav1.ResetObjectMetaForStatus,
		Default: func(obj runtime.Object) {
			s := &obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec
			defaultPolicy(&s.FailurePolicy, s.MatchConstraints)
		},
		// Status is the type checking the policy controller writes; a client's is dropped.
		PrepareCreate: func(obj runtime.Object) {
			obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
		},
		Generation: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateValidatingAdmissionPolicy(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy))
		},
		SubresourceUpdates: map[string]registry.SubresourceRules{"status": {Validate: validatePolicyStatus}},
		Table: policyTable(registry.IntegerColumn("Validations", "Validations is the count of validations."),
			admissionregistrationv1.ValidatingAdmissionPolicySpec{}.SwaggerDoc()["paramKind"],
			func(obj runtime.Object) (int, *admissionregistrationv1.ParamKind) {
				s := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec
				return len(s.Validations), s.ParamKind
			}),
	}

	ValidatingAdmissionPolicyBindingRules = registry.Rules{
		Warnings: staticSuffixWarnings,
		Default: func(obj runtime.Object) {
			defaultMatchResources(obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec.MatchResources)
		},
		Generation: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateValidatingAdmissionPolicyBinding(obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding))
		},
		Table: policyBindingTable(admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}.SwaggerDoc()["policyName"],
			admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}.SwaggerDoc()["paramRef"],
			func(obj runtime.Object) (string, *admissionregistrationv1.ParamRef) {
				s := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec
				return s.PolicyName, s.ParamRef
			}),
	}
)

// defaultPolicy fills what Kubernetes' v1 defaulters fill in a validating or mutating
// admission policy.
func defaultPolicy(failure **admissionregistrationv1.FailurePolicyType, match *admissionregistrationv1.MatchResources) {
	if *failure == nil {
		fail := admissionregistrationv1.Fail
		*failure = &fail
	}
	defaultMatchResources(match)
}

// policyTable is `kubectl get` of a validating or mutating admission policy: row says how
// many validations or mutations it has, and its paramKind.
func policyTable(count metav1.TableColumnDefinition, paramKindDoc string, row func(obj runtime.Object) (int, *admissionregistrationv1.ParamKind)) *registry.TableDef {
	return &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{registry.NameColumn, count, registry.Column("ParamKind", "string", paramKindDoc, false), registry.AgeColumn},
		Row: func(obj runtime.Object) []any {
			n, kind := row(obj)
			m := registry.MetaOf(obj)
			return []any{m.GetName(), int64(n), paramKindColumn(kind), registry.Age(m.GetCreationTimestamp())}
		},
	}
}

// policyBindingTable is `kubectl get` of a policy binding: its policyName and paramRef,
// which row reads, with their descriptions.
func policyBindingTable(policyNameDoc, paramRefDoc string, row func(obj runtime.Object) (string, *admissionregistrationv1.ParamRef)) *registry.TableDef {
	return &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("PolicyName", "string", policyNameDoc, false),
			registry.Column("ParamRef", "string", paramRefDoc, false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			policy, ref := row(obj)
			m := registry.MetaOf(obj)
			return []any{m.GetName(), policy, paramRefColumn(ref), registry.Age(m.GetCreationTimestamp())}
		},
	}
}

// paramKindColumn is a policy's PARAMKIND in `kubectl get`.
func paramKindColumn(pk *admissionregistrationv1.ParamKind) string {
	if pk == nil {
		return "<unset>"
	}
	return pk.APIVersion + "/" + pk.Kind
}

// paramRefColumn is a binding's PARAMREF in `kubectl get`.
func paramRefColumn(r *admissionregistrationv1.ParamRef) string {
	switch {
	case r == nil:
	case r.Name != "" && r.Namespace != "":
		return r.Namespace + "/" + r.Name
	case r.Name != "":
		return r.Name
	case r.Selector != nil:
		return "*/" + metav1.FormatLabelSelector(r.Selector)
	}
	return "<unset>"
}

func webhookConfigurationTable(row func(obj runtime.Object) (string, int)) *registry.TableDef {
	return &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.IntegerColumn("Webhooks", "Webhooks indicates the number of webhooks registered in this configuration"),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			name, n := row(obj)
			return []any{name, int64(n), registry.Age(registry.MetaOf(obj).GetCreationTimestamp())}
		},
	}
}

// defaultWebhook fills what Kubernetes' v1 defaulters fill in a webhook.
func defaultWebhook(failure **admissionregistrationv1.FailurePolicyType, match **admissionregistrationv1.MatchPolicyType,
	nsSel, objSel **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations, cc *admissionregistrationv1.WebhookClientConfig) {
	if *failure == nil {
		fail := admissionregistrationv1.Fail
		*failure = &fail
	}
	if *match == nil {
		eq := admissionregistrationv1.Equivalent
		*match = &eq
	}
	if *nsSel == nil {
		*nsSel = &metav1.LabelSelector{}
	}
	if *objSel == nil {
		*objSel = &metav1.LabelSelector{}
	}
	registry.DefaultInt32(timeout, 10)
	for i := range rules {
		defaultScope(&rules[i].Scope)
	}
	if cc.Service != nil {
		registry.DefaultInt32(&cc.Service.Port, 443)
	}
}

func defaultScope(s **admissionregistrationv1.ScopeType) {
	if *s == nil {
		all := admissionregistrationv1.AllScopes
		*s = &all
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		eq := admissionregistrationv1.Equivalent
		m.MatchPolicy = &eq
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		defaultScope(&m.ResourceRules[i].Scope)
	}
	for i := range m.ExcludeResourceRules {
		defaultScope(&m.ExcludeResourceRules[i].Scope)
	}
}

var (
	failurePolicies = []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore}
	matchPolicies   = []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Equivalent, admissionregistrationv1.Exact}
	sideEffects     = []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun}
	operations      = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Connect,
		admissionregistrationv1.Create, admissionregistrationv1.Delete, admissionregistrationv1.Update}
	scopes = []admissionregistrationv1.ScopeType{admissionregistrationv1.AllScopes, admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope}
)

// validateWebhook checks one webhook of a configuration, as Kubernetes' validateValidatingWebhook
// and validateMutatingWebhook do for a v1 object.
func validateWebhook(names sets.Set[string], p *field.Path, name string, rules []admissionregistrationv1.RuleWithOperations,
	failure *admissionregistrationv1.FailurePolicyType, match *admissionregistrationv1.MatchPolicyType, se *admissionregistrationv1.SideEffectClass,
	timeout *int32, reviewVersions []string, cc admissionregistrationv1.WebhookClientConfig, nsSel, objSel *metav1.LabelSelector,
	conditions []admissionregistrationv1.MatchCondition, reinvocation *admissionregistrationv1.ReinvocationPolicyType) field.ErrorList {
	// In kube's order: the webhook, then its review versions, then its name's uniqueness.
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), name)
	for i, r := range rules {
		errs = append(errs, validateRuleWithOperations(r, p.Child("rules").Index(i))...)
	}
	if failure != nil && !slices.Contains(failurePolicies, *failure) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *failure, failurePolicies))
	}
	if match != nil && !slices.Contains(matchPolicies, *match) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *match, matchPolicies))
	}
	if se == nil {
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+joinPlain(sideEffects)))
	} else if !slices.Contains(sideEffects, *se) {
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *se, sideEffects))
	}
	if timeout != nil && (*timeout < 1 || *timeout > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *timeout, "the timeout value must be between 1 and 30 seconds"))
	}
	labelOpts := metav1validation.LabelSelectorValidationOptions{}
	if nsSel != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(nsSel, labelOpts, p.Child("namespaceSelector"))...)
	}
	if objSel != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(objSel, labelOpts, p.Child("objectSelector"))...)
	}
	if reinvocation != nil && !slices.Contains(reinvocationPolicies, *reinvocation) { // a mutating webhook's
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *reinvocation, reinvocationPolicies))
	}
	errs = append(errs, validateClientConfig(cc, p.Child("clientConfig"))...)
	webhookCEL := &policyCEL{stored: sets.New[string]()}
	errs = append(errs, webhookCEL.matchConditions(conditions, p.Child("matchConditions"))...)
	errs = append(errs, validateReviewVersions(reviewVersions, p.Child("admissionReviewVersions"))...)
	if name != "" && names.Has(name) {
		errs = append(errs, field.Duplicate(p.Child("name"), name))
	}
	names.Insert(name)
	return errs
}

// joinPlain lists values as kube's webhook messages do: unquoted, comma-separated.
func joinPlain[T ~string](vs []T) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return strings.Join(out, ", ")
}

// validateReviewVersions: v1 objects must name the AdmissionReview versions they accept,
// and one of them must be one the API server speaks.
func validateReviewVersions(versions []string, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of v1, v1beta1")}
	}
	var errs field.ErrorList
	seen, known := sets.New[string](), false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		errs = append(errs, corevalidation.InvalidEach(p.Index(i), v, utilvalidation.IsDNS1035Label(v))...)
		known = known || v == "v1" || v == "v1beta1"
	}
	if !known {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of v1, v1beta1"))
	}
	return errs
}

// validateClientConfig: exactly one of url and service, each checked by k8s.io/apiserver's
// webhook validation, as kube-apiserver does.
func validateClientConfig(cc admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(p, "exactly one of url or service is required")}
	case cc.URL != nil:
		return webhookutil.ValidateWebhookURL(p.Child("url"), *cc.URL, true)
	}
	port := int32(443) // the default, when validation runs before defaulting
	if cc.Service.Port != nil {
		port = *cc.Service.Port
	}
	return webhookutil.ValidateWebhookService(p.Child("service"), cc.Service.Namespace, cc.Service.Name, cc.Service.Path, port)
}

func validateRuleWithOperations(r admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !slices.Contains(operations, op) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, operations))
		}
	}
	return append(errs, validateRule(r.Rule, p)...)
}

// validateRule checks groups, versions, resources ("*", "*/*", "pods/*", "*/status") and scope.
func validateRule(r admissionregistrationv1.Rule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), ""))
	}
	resources, subresources := sets.New[string](), sets.New[string]()
	for i, res := range r.Resources {
		rp := p.Child("resources").Index(i)
		if res == "" {
			errs = append(errs, field.Required(rp, ""))
			continue
		}
		parts := strings.SplitN(res, "/", 2)
		if parts[0] == "" || (len(parts) == 2 && parts[1] == "") {
			errs = append(errs, field.Invalid(rp, res, "resource and subresource must not be empty"))
			continue
		}
		resources.Insert(parts[0])
		if len(parts) == 2 {
			subresources.Insert(parts[1])
		}
	}
	if resources.Has("*") && resources.Len() > 1 && slices.Contains(r.Resources, "*") {
		errs = append(errs, field.Invalid(p.Child("resources"), r.Resources, "if '*' is present, must not specify other resources without subresources"))
	}
	if subresources.Has("*") && slices.Contains(r.Resources, "*/*") && len(r.Resources) > 1 {
		errs = append(errs, field.Invalid(p.Child("resources"), r.Resources, "if '*/*' is present, must not specify other resources"))
	}
	if r.Scope != nil && !slices.Contains(scopes, *r.Scope) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, scopes))
	}
	return errs
}

// maxMatchConditions is Kubernetes' limit on a webhook's or policy's match conditions.
const maxMatchConditions = 64

func validateMatchConditions(conditions []admissionregistrationv1.MatchCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conditions) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conditions), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, c := range conditions {
		cp := p.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			errs = append(errs, corevalidation.InvalidEach(cp.Child("name"), c.Name, validation.NameIsDNSLabel(c.Name, false))...)
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if strings.TrimSpace(c.Expression) == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		}
	}
	return errs
}

func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path, required bool) field.ErrorList {
	if m == nil {
		if required {
			return field.ErrorList{field.Required(p, "")}
		}
		return nil
	}
	// In the order of kube's validateMatchResources; a policy's rules, which give its
	// expressions their types, are required after it.
	var errs field.ErrorList
	if m.MatchPolicy != nil && !slices.Contains(matchPolicies, *m.MatchPolicy) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, matchPolicies))
	}
	labelOpts := metav1validation.LabelSelectorValidationOptions{}
	if m.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, labelOpts, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, labelOpts, p.Child("objectSelector"))...)
	}
	for i, r := range m.ResourceRules {
		errs = append(errs, validateNamedRule(r, p.Child("resourceRules").Index(i))...)
	}
	for i, r := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(r, p.Child("excludeResourceRules").Index(i))...)
	}
	if required && len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(p.Child("resourceRules"), ""))
	}
	return errs
}

func validateNamedRule(r admissionregistrationv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, n := range r.ResourceNames {
		errs = append(errs, corevalidation.InvalidEach(p.Child("resourceNames").Index(i), n, validation.NameIsDNSSubdomain(n, false))...)
	}
	return append(errs, validateRuleWithOperations(r.RuleWithOperations, p)...)
}

var validationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit, admissionregistrationv1.Deny, admissionregistrationv1.Warn}

// validationReasons are the reasons a validation may give, as kube lists them.
var validationReasons = []metav1.StatusReason{metav1.StatusReasonForbidden, metav1.StatusReasonInvalid, metav1.StatusReasonRequestEntityTooLarge}

// The bounds of a policy's audit annotations, kube's.
const (
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

// validateValidatingAdmissionPolicy is kube-apiserver's, in its order and CEL included: a
// policy whose expressions do not compile is refused when it is written.
func validateValidatingAdmissionPolicy(vap *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	errs := registry.ValidateMeta(vap, false, validation.NameIsDNSSubdomain)
	s, p := vap.Spec, field.NewPath("spec")
	if s.FailurePolicy != nil && !slices.Contains(failurePolicies, *s.FailurePolicy) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *s.FailurePolicy, failurePolicies))
	}
	errs = append(errs, validateParamKind(s.ParamKind, p.Child("paramKind"))...)
	errs = append(errs, validateMatchResources(s.MatchConstraints, p.Child("matchConstraints"), true)...)
	cel, err := newPolicyCEL(s.ParamKind != nil, nil)
	if err != nil {
		return append(errs, field.InternalError(p, err))
	}
	errs = append(errs, cel.matchConditions(s.MatchConditions, p.Child("matchConditions"))...)
	for i, v := range s.Variables {
		errs = append(errs, cel.variable(v, p.Child("variables").Index(i))...)
	}
	if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
		const want = "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(p.Child("validations"), want), field.Required(p.Child("auditAnnotations"), want))
	}
	for i, v := range s.Validations {
		errs = append(errs, cel.validation(v, p.Child("validations").Index(i))...)
	}
	if len(s.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(p.Child("auditAnnotations"), s.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i, a := range s.AuditAnnotations {
		ap := p.Child("auditAnnotations").Index(i)
		errs = append(errs, cel.auditAnnotation(vap.Name, a, ap)...)
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return errs
}

func validateValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	errs := registry.ValidateMeta(b, false, validation.NameIsDNSSubdomain)
	s, p := b.Spec, field.NewPath("spec")
	errs = append(errs, validatePolicyName(s.PolicyName, p.Child("policyName"))...)
	errs = append(errs, validateParamRef(s.ParamRef, p.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(s.MatchResources, p.Child("matchResources"), false)...)
	ap := p.Child("validationActions")
	if len(s.ValidationActions) == 0 {
		errs = append(errs, field.Required(ap, ""))
	}
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range s.ValidationActions {
		if !slices.Contains(validationActions, a) {
			errs = append(errs, field.NotSupported(ap.Index(i), a, validationActions))
		}
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(ap.Index(i), a))
		}
		seen.Insert(a)
	}
	if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(ap, s.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

// validateParamKind: a policy's params name their kind and its API version.
func validateParamKind(pk *admissionregistrationv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pk == nil {
		return nil
	}
	if pk.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	}
	if pk.APIVersion == "" {
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	}
	return errs
}

func validatePolicyName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return corevalidation.InvalidEach(p, name, validation.NameIsDNSSubdomain(name, false))
}

// validateParamRef: a binding's params by name or by selector, and what to do without one.
func validateParamRef(r *admissionregistrationv1.ParamRef, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if r.Name != "" && r.Selector != nil {
		errs = append(errs, field.Forbidden(p.Child("name"), "name and selector are mutually exclusive"))
	}
	if r.Name == "" && r.Selector == nil {
		errs = append(errs, field.Required(p, "one of name or selector must be specified"))
	}
	actions := []admissionregistrationv1.ParameterNotFoundActionType{admissionregistrationv1.AllowAction, admissionregistrationv1.DenyAction}
	if a := r.ParameterNotFoundAction; a == nil {
		errs = append(errs, field.Required(p.Child("parameterNotFoundAction"), ""))
	} else if !slices.Contains(actions, *a) {
		errs = append(errs, field.NotSupported(p.Child("parameterNotFoundAction"), *a, actions))
	}
	return errs
}

// staticSuffixWarnings is kube's WarningsForStaticSuffix, with its
// ManifestBasedAdmissionControlConfig gate off (alpha in v1.36): a name in the suffix kept
// for configurations read from files is warned of, on create and update.
func staticSuffixWarnings(obj, _ runtime.Object) []string {
	if strings.HasSuffix(registry.MetaOf(obj).GetName(), ".static.k8s.io") {
		return []string{`metadata.name: names ending with ".static.k8s.io" are reserved for static manifest-based configurations and cannot be managed via the API`}
	}
	return nil
}
