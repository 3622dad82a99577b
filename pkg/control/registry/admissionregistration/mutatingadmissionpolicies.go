package admissionregistration

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// MutatingAdmissionPolicies and their bindings (admissionregistration.k8s.io/v1, served by
// default since Kubernetes 1.36), defaulted and validated as Kubernetes'
// pkg/apis/admissionregistration does, CEL included: a policy whose expressions do not
// compile is refused when it is written, as kube-apiserver refuses it.

var (
	MutatingAdmissionPolicyRules = registry.Rules{
		Warnings: staticSuffixWarnings,
		Default: func(obj runtime.Object) {
			s := &obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec
			defaultPolicy(&s.FailurePolicy, s.MatchConstraints)
		},
		Generation: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateMutatingAdmissionPolicy(obj.(*admissionregistrationv1.MutatingAdmissionPolicy), nil)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateMutatingAdmissionPolicy(obj.(*admissionregistrationv1.MutatingAdmissionPolicy), old.(*admissionregistrationv1.MutatingAdmissionPolicy))
		},
		Table: policyTable(registry.IntegerColumn("Mutations", "Mutation indicates the number of mutations rules defined in this configuration"),
			"ParamKind specifies the kind of resources used to parameterize this policy",
			func(obj runtime.Object) (int, *admissionregistrationv1.ParamKind) {
				s := obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec
				return len(s.Mutations), s.ParamKind
			}),
	}

	MutatingAdmissionPolicyBindingRules = registry.Rules{
		Warnings: staticSuffixWarnings,
		Default: func(obj runtime.Object) {
			defaultMatchResources(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec.MatchResources)
		},
		Generation: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateMutatingAdmissionPolicyBinding(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding))
		},
		Table: policyBindingTable("PolicyName indicates the policy definition which the policy binding binded to",
			"ParamRef indicates the param resource which sets the configuration param",
			func(obj runtime.Object) (string, *admissionregistrationv1.ParamRef) {
				s := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec
				return s.PolicyName, s.ParamRef
			}),
	}
)

// mutatingOperations are the operations a mutating policy may match: there is no object
// to mutate in a DELETE or CONNECT.
var mutatingOperations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update}

var (
	patchTypes           = []admissionregistrationv1.PatchType{admissionregistrationv1.PatchTypeApplyConfiguration, admissionregistrationv1.PatchTypeJSONPatch}
	reinvocationPolicies = []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy}
)

// validateMutatingAdmissionPolicy checks a policy as kube-apiserver's
// ValidateMutatingAdmissionPolicy(Update) does; old is nil on create. On update the
// expressions old already held compile in the stored-expressions environment, so a policy
// stays updatable when a CEL library is withdrawn from new expressions.
func validateMutatingAdmissionPolicy(m *admissionregistrationv1.MutatingAdmissionPolicy, old *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	errs := registry.ValidateMeta(m, false, validation.NameIsDNSSubdomain)
	s, p := m.Spec, field.NewPath("spec")
	if s.FailurePolicy == nil {
		errs = append(errs, field.Required(p.Child("failurePolicy"), ""))
	} else if !slices.Contains(failurePolicies, *s.FailurePolicy) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *s.FailurePolicy, failurePolicies))
	}
	errs = append(errs, validateParamKind(s.ParamKind, p.Child("paramKind"))...)
	errs = append(errs, validateMatchResources(s.MatchConstraints, p.Child("matchConstraints"), true)...)
	if s.MatchConstraints != nil {
		errs = append(errs, validateMutatingOperations(s.MatchConstraints, p.Child("matchConstraints", "resourceRules"))...)
	}
	if len(s.ReinvocationPolicy) == 0 {
		errs = append(errs, field.Required(p.Child("reinvocationPolicy"), ""))
	} else if !slices.Contains(reinvocationPolicies, s.ReinvocationPolicy) {
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), s.ReinvocationPolicy, reinvocationPolicies))
	}
	var oldSpec *admissionregistrationv1.MutatingAdmissionPolicySpec
	if old != nil {
		oldSpec = &old.Spec
	}
	cel, err := newPolicyCEL(s.ParamKind != nil, oldSpec)
	if err != nil {
		return append(errs, field.InternalError(p, err))
	}
	// Unchanged match conditions are not compiled again, as kube-apiserver leaves them be.
	if old == nil || !slices.Equal(s.MatchConditions, old.Spec.MatchConditions) {
		errs = append(errs, cel.matchConditions(s.MatchConditions, p.Child("matchConditions"))...)
	}
	for i, v := range s.Variables {
		errs = append(errs, cel.variable(v, p.Child("variables").Index(i))...)
	}
	if len(s.Mutations) == 0 {
		errs = append(errs, field.Required(p.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, mu := range s.Mutations {
		errs = append(errs, cel.mutation(mu, p.Child("mutations").Index(i))...)
	}
	return errs
}

// validateMutatingOperations: a mutating policy or binding matches CREATE and UPDATE only.
func validateMutatingOperations(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, r := range m.ResourceRules {
		for _, op := range r.Operations {
			if !slices.Contains(mutatingOperations, op) {
				errs = append(errs, field.NotSupported(p.Child("operations"), op, mutatingOperations))
			}
		}
	}
	return errs
}

func validateMutatingAdmissionPolicyBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	errs := registry.ValidateMeta(b, false, validation.NameIsDNSSubdomain)
	s, p := b.Spec, field.NewPath("spec")
	errs = append(errs, validatePolicyName(s.PolicyName, p.Child("policyName"))...)
	errs = append(errs, validateParamRef(s.ParamRef, p.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(s.MatchResources, p.Child("matchResources"), false)...)
	if s.MatchResources != nil {
		errs = append(errs, validateMutatingOperations(s.MatchResources, p.Child("matchResources", "resourceRules"))...)
	}
	return errs
}

// policyCEL compiles one policy's expressions as kube-apiserver's validation does: with
// one composited compiler, so later expressions see the variables declared before them.
type policyCEL struct {
	compiler  *plugincel.CompositedCompiler
	hasParams bool
	stored    sets.Set[string] // the expressions the policy held before this update
}

func newPolicyCEL(hasParams bool, old *admissionregistrationv1.MutatingAdmissionPolicySpec) (*policyCEL, error) {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, fmt.Errorf("the CEL compiler: %w", err)
	}
	stored := sets.New[string]()
	if old != nil {
		for _, c := range old.MatchConditions {
			stored.Insert(c.Expression)
		}
		for _, v := range old.Variables {
			stored.Insert(v.Expression)
		}
		for _, m := range old.Mutations {
			switch {
			case m.ApplyConfiguration != nil:
				stored.Insert(m.ApplyConfiguration.Expression)
			case m.JSONPatch != nil:
				stored.Insert(m.JSONPatch.Expression)
			}
		}
	}
	return &policyCEL{compiler: compiler, hasParams: hasParams, stored: stored}, nil
}

func (c *policyCEL) env(expression string) environment.Type {
	if c.stored.Has(expression) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// matchConditionCompiler compiles match conditions, which see no variables.
var matchConditionCompiler = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// matchConditions checks a webhook's or policy's match conditions, then compiles each, as
// kube-apiserver refuses one that does not compile when it is written.
func (c *policyCEL) matchConditions(conditions []admissionregistrationv1.MatchCondition, p *field.Path) field.ErrorList {
	errs := validateMatchConditions(conditions, p)
	for i, m := range conditions {
		errs = append(errs, c.matchCondition(m, p.Index(i).Child("expression"))...)
	}
	return errs
}

func (c *policyCEL) matchCondition(m admissionregistrationv1.MatchCondition, p *field.Path) field.ErrorList {
	if strings.TrimSpace(m.Expression) == "" {
		return nil // validateMatchConditions requires it
	}
	accessor := (*matchconditions.MatchCondition)(&m)
	r := matchConditionCompiler().CompileCELExpression(accessor, plugincel.OptionalVariableDeclarations{HasParams: c.hasParams, HasAuthorizer: true}, c.env(m.Expression))
	return celError(p, m.Expression, r.Error)
}

func (c *policyCEL) variable(v admissionregistrationv1.Variable, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Name) == "" {
		errs = append(errs, field.Required(p.Child("name"), "name is not specified"))
	} else if !isCELIdentifier(v.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), v.Name, "must be a valid CEL identifier"))
	}
	if strings.TrimSpace(v.Expression) == "" {
		return append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	}
	r := c.compiler.CompileAndStoreVariable(&mutating.Variable{Name: v.Name, Expression: v.Expression},
		plugincel.OptionalVariableDeclarations{HasParams: c.hasParams, HasAuthorizer: true}, c.env(v.Expression))
	return append(errs, celError(p.Child("expression"), v.Expression, r.Error)...)
}

func (c *policyCEL) mutation(m admissionregistrationv1.Mutation, p *field.Path) field.ErrorList {
	var (
		errs       field.ErrorList
		expression string
		accessor   plugincel.ExpressionAccessor
		ep         *field.Path
	)
	switch m.PatchType {
	case "":
		return field.ErrorList{field.Required(p.Child("patchType"), "")}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(p.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
		if m.ApplyConfiguration == nil {
			return append(errs, field.Required(p.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		}
		expression, ep = m.ApplyConfiguration.Expression, p.Child("applyConfiguration", "expression")
		accessor = &patch.ApplyConfigurationCondition{Expression: strings.TrimSpace(expression)}
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(p.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
		if m.JSONPatch == nil {
			return append(errs, field.Required(p.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		}
		expression, ep = m.JSONPatch.Expression, p.Child("jsonPatch", "expression")
		accessor = &patch.JSONPatchCondition{Expression: strings.TrimSpace(expression)}
	default:
		return field.ErrorList{field.NotSupported(p.Child("patchType"), m.PatchType, patchTypes)}
	}
	if strings.TrimSpace(expression) == "" {
		return append(errs, field.Required(ep, ""))
	}
	r := c.compiler.CompileCELExpression(accessor,
		plugincel.OptionalVariableDeclarations{HasParams: c.hasParams, HasAuthorizer: true, HasPatchTypes: true}, c.env(expression))
	return append(errs, celError(ep, expression, r.Error)...)
}

// validation is kube's validateValidation: the expression compiled, the message
// expression if given (it sees no authorizer), the message on one line, a known reason.
func (c *policyCEL) validation(v admissionregistrationv1.Validation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		r := c.compiler.CompileCELExpression(&validating.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: c.hasParams, HasAuthorizer: true}, c.env(v.Expression))
		errs = append(errs, celError(p.Child("expression"), v.Expression, r.Error)...)
	}
	switch trimmed := strings.TrimSpace(v.MessageExpression); {
	case v.MessageExpression != "" && trimmed == "":
		errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	case trimmed != "":
		r := c.compiler.CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{HasParams: c.hasParams}, c.env(v.MessageExpression))
		errs = append(errs, celError(p.Child("messageExpression"), v.MessageExpression, r.Error)...)
	}
	switch trimmed := strings.TrimSpace(v.Message); {
	case v.Message != "" && trimmed == "":
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must be non-empty if specified"))
	case strings.ContainsAny(trimmed, "\n\r"):
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !slices.Contains(validationReasons, *v.Reason) {
		errs = append(errs, field.NotSupported(p.Child("reason"), *v.Reason, validationReasons))
	}
	return errs
}

// auditAnnotation is kube's validateAuditAnnotation of a policy named policy: a key that
// makes a qualified name after the policy's, a value expression that compiles.
func (c *policyCEL) auditAnnotation(policy string, a admissionregistrationv1.AuditAnnotation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy != "" {
		errs = append(errs, corevalidation.InvalidEach(p.Child("key"), policy+"/"+a.Key, utilvalidation.IsQualifiedName(policy+"/"+a.Key))...)
	} else {
		errs = append(errs, field.Invalid(p.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}
	switch trimmed := strings.TrimSpace(a.ValueExpression); {
	case trimmed == "":
		errs = append(errs, field.Required(p.Child("valueExpression"), "valueExpression is not specified"))
	case len(trimmed) > maxAuditAnnotationValueExpressionLength:
		errs = append(errs, field.Required(p.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
	default:
		r := c.compiler.CompileCELExpression(&validating.AuditAnnotationCondition{ValueExpression: trimmed},
			plugincel.OptionalVariableDeclarations{HasParams: c.hasParams, HasAuthorizer: true}, c.env(a.ValueExpression))
		errs = append(errs, celError(p.Child("valueExpression"), a.ValueExpression, r.Error)...)
	}
	return errs
}

// celError is a compilation error as the field error kube-apiserver answers with.
func celError(p *field.Path, expression string, err *apiservercel.Error) field.ErrorList {
	if err == nil {
		return nil
	}
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.ErrorList{field.Required(p, err.Detail)}
	case apiservercel.ErrorTypeInvalid:
		return field.ErrorList{field.Invalid(p, expression, err.Detail)}
	}
	return field.ErrorList{field.InternalError(p, err)}
}

var celReserved = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
	"if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")

// isCELIdentifier: [_a-zA-Z][_a-zA-Z0-9]* and not a reserved word, CEL's IDENT.
func isCELIdentifier(name string) bool {
	for i, r := range name {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return name != "" && !celReserved.Has(name)
}
