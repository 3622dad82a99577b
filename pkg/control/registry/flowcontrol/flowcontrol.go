// Package flowcontrol holds the rules of the flowcontrol.apiserver.k8s.io/v1 kinds:
// FlowSchemas and PriorityLevelConfigurations, and the bootstrap configuration every
// cluster has, as Kubernetes' pkg/registry/flowcontrol has them.
package flowcontrol

import (
	"fmt"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3" // the annotation v1beta3 used, forbidden since
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/shufflesharding"
)

// flowcontrol.apiserver.k8s.io/v1 as Kubernetes' flowcontrol strategies, defaulters,
// validation and printers have it. The objects are served and kept, not enforced: miniapi's
// own fairness (apiserver/seats) does not read them (docs/design.md).

// BootstrapFlowControl returns the PriorityLevelConfigurations and FlowSchemas
// kube-apiserver creates at start, mandatory and suggested, priority levels first.
func BootstrapFlowControl() (levels []*flowcontrolv1.PriorityLevelConfiguration, schemas []*flowcontrolv1.FlowSchema) {
	levels = append(slices.Clone(bootstrap.MandatoryPriorityLevelConfigurations), bootstrap.SuggestedPriorityLevelConfigurations...)
	schemas = append(slices.Clone(bootstrap.MandatoryFlowSchemas), bootstrap.SuggestedFlowSchemas...)
	return levels, schemas
}

// Kubernetes' defaults for flowcontrol/v1 (pkg/apis/flowcontrol/v1/defaults.go).
const (
	defaultMatchingPrecedence       = 1000
	defaultHandSize                 = 8
	defaultQueues                   = 64
	defaultQueueLengthLimit         = 50
	defaultNominalConcurrencyShares = 30
	maxQueues                       = 10 * 1000 * 1000
)

var (
	flowVerbs            = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	distinguisherMethods = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	subjectKinds         = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	enablements          = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	limitResponseTypes   = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

var FlowSchemaRules = registry.Rules{
	StatusMetadata: registry.StatusKeepsAllMetadata,
	Generation:     true,
	PrepareCreate: func(obj runtime.Object) {
		obj.(*flowcontrolv1.FlowSchema).Status = flowcontrolv1.FlowSchemaStatus{}
	},
	Default: func(obj runtime.Object) {
		if s := &obj.(*flowcontrolv1.FlowSchema).Spec; s.MatchingPrecedence == 0 {
			s.MatchingPrecedence = defaultMatchingPrecedence
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validateFlowSchema(obj.(*flowcontrolv1.FlowSchema))
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("PriorityLevel", "string", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"], false),
			registry.Column("MatchingPrecedence", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"], false),
			registry.Column("DistinguisherMethod", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"], false),
			registry.AgeColumn,
			registry.Column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration", false),
		},
		Row: func(obj runtime.Object) []any {
			fs := obj.(*flowcontrolv1.FlowSchema)
			method := "<none>"
			if fs.Spec.DistinguisherMethod != nil {
				method = string(fs.Spec.DistinguisherMethod.Type)
			}
			missing := "?" // the Dangling condition, which only APF's controller sets
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
					missing = string(c.Status)
					break
				}
			}
			return []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, registry.Age(fs.CreationTimestamp), missing}
		},
	},
}

func validateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	errs := registry.ValidateMeta(fs, false, validation.NameIsDNSSubdomain)
	spec, s := field.NewPath("spec"), &fs.Spec
	switch {
	case s.MatchingPrecedence <= 0:
		errs = append(errs, field.Invalid(spec.Child("matchingPrecedence"), s.MatchingPrecedence, "must be a positive value"))
	case s.MatchingPrecedence > flowcontrolv1.FlowSchemaMaxMatchingPrecedence:
		errs = append(errs, field.Invalid(spec.Child("matchingPrecedence"), s.MatchingPrecedence,
			fmt.Sprintf("must not be greater than %v", flowcontrolv1.FlowSchemaMaxMatchingPrecedence)))
	case s.MatchingPrecedence == 1 && fs.Name != flowcontrolv1.FlowSchemaNameExempt:
		errs = append(errs, field.Invalid(spec.Child("matchingPrecedence"), s.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := s.DistinguisherMethod; dm != nil && !slices.Contains(distinguisherMethods, string(dm.Type)) {
		errs = append(errs, field.NotSupported(spec.Child("distinguisherMethod", "type"), registry.GoNamed{V: dm}, distinguisherMethods))
	}
	plPath := spec.Child("priorityLevelConfiguration", "name")
	if pl := s.PriorityLevelConfiguration.Name; pl == "" {
		errs = append(errs, field.Required(plPath, "must reference a priority level"))
	} else {
		errs = append(errs, corevalidation.InvalidEach(plPath, pl, validation.NameIsDNSSubdomain(pl, false))...)
	}
	for i := range s.Rules {
		errs = append(errs, validatePolicyRulesWithSubjects(&s.Rules[i], spec.Child("rules").Index(i))...)
	}
	for _, m := range bootstrap.MandatoryFlowSchemas {
		if m.Name == fs.Name && !equality.Semantic.DeepEqual(*s, m.Spec) {
			errs = append(errs, field.Invalid(spec, registry.GoNamed{V: s}, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
		}
	}
	conditions := make([]string, len(fs.Status.Conditions))
	for i, c := range fs.Status.Conditions {
		conditions[i] = string(c.Type)
	}
	return append(errs, validateConditionTypes(conditions, field.NewPath("status", "conditions"))...)
}

// validateConditionTypes: each type at most once, every condition has a type.
func validateConditionTypes(types []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range types {
		if slices.Contains(types[:i], t) {
			errs = append(errs, field.Duplicate(path.Index(i).Child("type"), t))
		}
		if t == "" {
			errs = append(errs, field.Required(path.Index(i).Child("type"), ""))
		}
	}
	return errs
}

func validatePolicyRulesWithSubjects(rule *flowcontrolv1.PolicyRulesWithSubjects, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(path.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateFlowSubject(&rule.Subjects[i], path.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i, r := range rule.ResourceRules {
		p := path.Child("resourceRules").Index(i)
		errs = append(errs, validateFlowVerbs(r.Verbs, p.Child("verbs"))...)
		errs = append(errs, validateWildcardList(r.APIGroups, p.Child("apiGroups"), "resource rules must supply at least one api group", "api groups")...)
		errs = append(errs, validateWildcardList(r.Resources, p.Child("resources"), "resource rules must supply at least one resource", "resources")...)
		errs = append(errs, validateRuleNamespaces(r, p.Child("namespaces"))...)
	}
	for i, r := range rule.NonResourceRules {
		p := path.Child("nonResourceRules").Index(i)
		errs = append(errs, validateFlowVerbs(r.Verbs, p.Child("verbs"))...)
		errs = append(errs, validateNonResourceURLs(r.NonResourceURLs, p.Child("nonResourceURLs"))...)
	}
	return errs
}

// validateFlowSubject: the member named by kind is set, the others are not.
func validateFlowSubject(s *flowcontrolv1.Subject, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, member, kind string) {
		if set {
			errs = append(errs, field.Forbidden(path.Child(member), fmt.Sprintf("%s is forbidden when subject kind is not '%s'", member, kind)))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = append(errs, validateServiceAccountSubject(s.ServiceAccount, path.Child("serviceAccount"))...)
		forbid(s.User != nil, "user", "User")
		forbid(s.Group != nil, "group", "Group")
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(path.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(path.Child("user", "name"), ""))
		}
		forbid(s.ServiceAccount != nil, "serviceAccount", "ServiceAccount")
		forbid(s.Group != nil, "group", "Group")
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(path.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(path.Child("group", "name"), ""))
		}
		forbid(s.ServiceAccount != nil, "serviceAccount", "ServiceAccount")
		forbid(s.User != nil, "user", "User")
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), s.Kind, subjectKinds))
	}
	return errs
}

func validateServiceAccountSubject(sa *flowcontrolv1.ServiceAccountSubject, path *field.Path) field.ErrorList {
	if sa == nil {
		return field.ErrorList{field.Required(path, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	switch {
	case sa.Name == "":
		errs = append(errs, field.Required(path.Child("name"), ""))
	case sa.Name != flowcontrolv1.NameAll:
		errs = append(errs, corevalidation.InvalidEach(path.Child("name"), sa.Name, validation.ValidateServiceAccountName(sa.Name, false))...)
	}
	if sa.Namespace == "" {
		return append(errs, field.Required(path.Child("namespace"), "must specify namespace for service account"))
	}
	errs = append(errs, corevalidation.InvalidEach(path.Child("namespace"), sa.Namespace, validation.ValidateNamespaceName(sa.Namespace, false))...)
	return errs
}

func validateFlowVerbs(verbs []string, path *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(path, "verbs must contain at least one value")}
	case slices.Contains(verbs, flowcontrolv1.VerbAll):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(path, verbs, "if '*' is present, must not specify other verbs")}
		}
	default:
		for _, v := range verbs {
			if !slices.Contains(flowVerbs, v) {
				return field.ErrorList{field.NotSupported(path, verbs, flowVerbs)}
			}
		}
	}
	return nil
}

// validateWildcardList: not empty, and '*' alone if present.
func validateWildcardList(list []string, path *field.Path, required, what string) field.ErrorList {
	switch {
	case len(list) == 0:
		return field.ErrorList{field.Required(path, required)}
	case len(list) > 1 && slices.Contains(list, "*"):
		return field.ErrorList{field.Invalid(path, list, "if '*' is present, must not specify other "+what)}
	}
	return nil
}

func validateRuleNamespaces(r flowcontrolv1.ResourcePolicyRule, path *field.Path) field.ErrorList {
	if len(r.Namespaces) == 0 && !r.ClusterScope {
		return field.ErrorList{field.Required(path, "resource rules that are not cluster scoped must supply at least one namespace")}
	}
	if slices.Contains(r.Namespaces, flowcontrolv1.NamespaceEvery) {
		if len(r.Namespaces) > 1 {
			return field.ErrorList{field.Invalid(path, r.Namespaces, "if '*' is present, must not specify other namespaces")}
		}
		return nil
	}
	var errs field.ErrorList
	for i, ns := range r.Namespaces {
		for _, msg := range validation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(path.Index(i), ns, "each member of this list must be '*' or a DNS-1123 label; "+msg))
		}
	}
	return errs
}

func validateNonResourceURLs(urls []string, path *field.Path) field.ErrorList {
	switch {
	case len(urls) == 0:
		return field.ErrorList{field.Required(path, "nonResourceURLs must contain at least one value")}
	case slices.Contains(urls, flowcontrolv1.NonResourceAll):
		if len(urls) > 1 {
			return field.ErrorList{field.Invalid(path, urls, "if '*' is present, must not specify other non-resource URLs")}
		}
		return nil
	}
	var errs field.ErrorList
	for i, u := range urls {
		if msg := nonResourceURLProblem(u); msg != "" {
			errs = append(errs, field.Invalid(path.Index(i), u, msg))
		}
	}
	return errs
}

// nonResourceURLProblem says what is wrong with a non-resource URL of a rule, "" if nothing.
func nonResourceURLProblem(u string) string {
	switch stars := strings.Count(u, "*"); {
	case u == "":
		return "must not be empty"
	case u == "/":
		return ""
	case !strings.HasPrefix(u, "/"):
		return "must start with slash"
	case strings.Contains(u, " "):
		return "must not contain white-space"
	case strings.Contains(u, "//"):
		return "must not contain double slash"
	case stars > 1 || stars == 1 && !strings.HasSuffix(u, "/*"):
		return "wildcard can only do suffix matching"
	}
	return ""
}

var PriorityLevelRules = registry.Rules{
	StatusMetadata: registry.StatusKeepsAllMetadata,
	Generation:     true,
	PrepareCreate: func(obj runtime.Object) {
		obj.(*flowcontrolv1.PriorityLevelConfiguration).Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
	},
	Default: func(obj runtime.Object) {
		defaultPriorityLevel(&obj.(*flowcontrolv1.PriorityLevelConfiguration).Spec)
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validatePriorityLevel(obj.(*flowcontrolv1.PriorityLevelConfiguration))
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Type", "string", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"], false),
			registry.Column("NominalConcurrencyShares", "string", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"], false),
			registry.Column("Queues", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"], false),
			registry.Column("HandSize", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"], false),
			registry.Column("QueueLengthLimit", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
			shares, queues, hand, limit := any("<none>"), any("<none>"), any("<none>"), any("<none>")
			if l := pl.Spec.Limited; l != nil {
				if l.NominalConcurrencyShares != nil {
					shares = int64(*l.NominalConcurrencyShares)
				}
				if q := l.LimitResponse.Queuing; q != nil {
					queues, hand, limit = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
				}
			}
			return []any{pl.Name, string(pl.Spec.Type), shares, queues, hand, limit, registry.Age(pl.CreationTimestamp)}
		},
	},
}

func defaultPriorityLevel(s *flowcontrolv1.PriorityLevelConfigurationSpec) {
	zero := func(p **int32, v int32) {
		if *p == nil {
			*p = &v
		}
	}
	if e := s.Exempt; e != nil {
		zero(&e.NominalConcurrencyShares, 0)
		zero(&e.LendablePercent, 0)
	}
	l := s.Limited
	if l == nil {
		return
	}
	zero(&l.NominalConcurrencyShares, defaultNominalConcurrencyShares)
	zero(&l.LendablePercent, 0)
	if q := l.LimitResponse.Queuing; q != nil {
		if q.HandSize == 0 {
			q.HandSize = defaultHandSize
		}
		if q.Queues == 0 {
			q.Queues = defaultQueues
		}
		if q.QueueLengthLimit == 0 {
			q.QueueLengthLimit = defaultQueueLengthLimit
		}
	}
}

func validatePriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	errs := registry.ValidateMeta(pl, false, validation.NameIsDNSSubdomain)
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations"),
			fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	spec, s := field.NewPath("spec"), &pl.Spec
	exempt := pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt
	if exempt != (s.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(spec.Child("type"), s.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch s.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if s.Limited != nil {
			errs = append(errs, field.Forbidden(spec.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := s.Exempt; e != nil {
			p := spec.Child("exempt")
			errs = append(errs, validateShares(e.NominalConcurrencyShares, p.Child("nominalConcurrencyShares"))...)
			errs = append(errs, validateLendablePercent(e.LendablePercent, p.Child("lendablePercent"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if s.Exempt != nil {
			errs = append(errs, field.Forbidden(spec.Child("exempt"), "must be nil if the type is Limited"))
		}
		if s.Limited == nil {
			errs = append(errs, field.Required(spec.Child("limited"), "must not be empty when type is Limited"))
		} else {
			errs = append(errs, validateLimited(s.Limited, spec.Child("limited"))...)
		}
	case "":
		errs = append(errs, field.Required(spec.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(spec.Child("type"), s.Type, enablements))
	}
	errs = append(errs, validateMandatoryPriorityLevel(pl, spec)...)
	conditions := make([]string, len(pl.Status.Conditions))
	for i, c := range pl.Status.Conditions {
		conditions[i] = string(c.Type)
	}
	return append(errs, validateConditionTypes(conditions, field.NewPath("status", "conditions"))...)
}

// validateMandatoryPriorityLevel: the mandatory levels keep their fixed spec; only exempt's
// spec.exempt may be changed.
func validateMandatoryPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration, spec *field.Path) field.ErrorList {
	for _, m := range bootstrap.MandatoryPriorityLevelConfigurations {
		if m.Name != pl.Name {
			continue
		}
		have, msg := pl.Spec.DeepCopy(), fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			have.Exempt = m.Spec.Exempt
			msg = fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)
		}
		if !equality.Semantic.DeepEqual(*have, m.Spec) {
			return field.ErrorList{field.Invalid(spec, registry.GoNamed{V: pl.Spec}, msg)}
		}
	}
	return nil
}

// validateLimited checks in kube's order: shares, the limit response, then the percentages.
func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, path *field.Path) field.ErrorList {
	errs := validateShares(l.NominalConcurrencyShares, path.Child("nominalConcurrencyShares"))
	errs = append(errs, validateLimitResponse(&l.LimitResponse, path.Child("limitResponse"))...)
	errs = append(errs, validateLendablePercent(l.LendablePercent, path.Child("lendablePercent"))...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(path.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateLimitResponse(lr *flowcontrolv1.LimitResponse, lp *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			errs = append(errs, field.Forbidden(lp.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			errs = append(errs, field.Required(lp.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
		} else {
			errs = append(errs, validateQueuing(lr.Queuing, lp.Child("queuing"))...)
		}
	case "":
		errs = append(errs, field.Required(lp.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(lp.Child("type"), lr.Type, limitResponseTypes))
	}
	return errs
}

func validateShares(shares *int32, path *field.Path) field.ErrorList {
	if shares != nil && *shares < 0 {
		return field.ErrorList{field.Invalid(path, *shares, "must be a non-negative integer")}
	}
	return nil
}

func validateLendablePercent(p *int32, path *field.Path) field.ErrorList {
	if p != nil && (*p < 0 || *p > 100) {
		return field.ErrorList{field.Invalid(path, *p, "must be between 0 and 100, inclusive")}
	}
	return nil
}

func validateQueuing(q *flowcontrolv1.QueuingConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(path.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	switch {
	case q.Queues <= 0:
		errs = append(errs, field.Invalid(path.Child("queues"), q.Queues, "must be positive"))
	case q.Queues > maxQueues:
		errs = append(errs, field.Invalid(path.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(path.Child("handSize"), q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(path.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
		errs = append(errs, field.Invalid(path.Child("handSize"), q.HandSize,
			fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
	}
	return errs
}
