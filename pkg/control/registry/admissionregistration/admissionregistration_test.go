package admissionregistration

import (
	"reflect"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"

	"github.com/minik8s/minik8s/pkg/control/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// A webhook configuration is defaulted as Kubernetes' v1 defaulters do and refused, naming
// the field, where kube-apiserver refuses it.
func TestWebhookConfigurationRules(t *testing.T) {
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:8443/validate"
	good := func() *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "check"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:                    "check.pods.example.com",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
				Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
				SideEffects:             &none,
				AdmissionReviewVersions: []string{"v1"},
			}},
		}
	}
	c := good()
	ValidatingWebhookConfigurationRules.Default(c)
	w := c.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		w.NamespaceSelector == nil || w.ObjectSelector == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("defaults: %+v", w)
	}
	if errs := ValidatingWebhookConfigurationRules.Validate(c); len(errs) != 0 {
		t.Errorf("a valid configuration refused: %v", errs)
	}
	// An empty service path is the root, as kube-apiserver takes it.
	empty := ""
	c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: &empty}}
	c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-a-lease", Expression: "object.kind != 'Lease'"}}
	if errs := ValidatingWebhookConfigurationRules.Validate(c); len(errs) != 0 {
		t.Errorf("a service with an empty path, a condition that compiles: refused: %v", errs)
	}
	for name, tc := range map[string]struct {
		change func(w *admissionregistrationv1.ValidatingWebhook)
		want   string
	}{
		"two segments":    {func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "check.pods" }, "webhooks[0].name: Invalid value"},
		"http":            {func(w *admissionregistrationv1.ValidatingWebhook) { u := "http://x.example/"; w.ClientConfig.URL = &u }, "'https' is the only allowed URL scheme"},
		"no clientConfig": {func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = nil }, "exactly one of url or service is required"},
		"no sideEffects":  {func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil }, "webhooks[0].sideEffects: Required value"},
		"no v1 reviews":   {func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v2"} }, "must include at least one of v1, v1beta1"},
		"timeout":         {func(w *admissionregistrationv1.ValidatingWebhook) { s := int32(31); w.TimeoutSeconds = &s }, "the timeout value must be between 1 and 30 seconds"},
		"operation": {func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"}
		}, "webhooks[0].rules[0].operations[0]: Unsupported value"},
		"condition that does not compile": {func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "bad", Expression: "object.x +"}}
		}, "webhooks[0].matchConditions[0].expression: Invalid value"},
		"service path segment": {func(w *admissionregistrationv1.ValidatingWebhook) {
			path := "/a//b"
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: &path}}
		}, "segment[1] may not be empty"},
	} {
		c := good()
		tc.change(&c.Webhooks[0])
		errs := ValidatingWebhookConfigurationRules.Validate(c)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", name, tc.want, errs)
		}
	}
}

// A MutatingAdmissionPolicy is defaulted as Kubernetes' v1 defaulters do and refused, naming
// the field, where kube-apiserver refuses it: CEL that does not compile included.
func TestMutatingAdmissionPolicyRules(t *testing.T) {
	good := func() *admissionregistrationv1.MutatingAdmissionPolicy {
		return &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "label"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{"CREATE"},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}}},
				Variables:          []admissionregistrationv1.Variable{{Name: "who", Expression: `"policy"`}},
				MatchConditions:    []admissionregistrationv1.MatchCondition{{Name: "named", Expression: `object.metadata.name != ""`}},
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				Mutations: []admissionregistrationv1.Mutation{{
					PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"by": variables.who}}}`},
				}, {
					PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/data/x", value: "y"}]`},
				}},
			},
		}
	}
	p := good()
	MutatingAdmissionPolicyRules.Default(p)
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || *p.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent ||
		p.Spec.MatchConstraints.NamespaceSelector == nil || *p.Spec.MatchConstraints.ResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("defaults: %+v", p.Spec)
	}
	if errs := MutatingAdmissionPolicyRules.Validate(p); len(errs) != 0 {
		t.Errorf("a valid policy refused: %v", errs)
	}
	for name, tc := range map[string]struct {
		change func(s *admissionregistrationv1.MutatingAdmissionPolicySpec)
		want   string
	}{
		"bad apply CEL": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.Mutations[0].ApplyConfiguration.Expression = `Object{metadata: nope}`
		}, "spec.mutations[0].applyConfiguration.expression: Invalid value"},
		"bad JSON patch CEL": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.Mutations[1].JSONPatch.Expression = `[JSONPatch{op: 1}]`
		}, "spec.mutations[1].jsonPatch.expression: Invalid value"},
		"undeclared variable": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) { s.Variables = nil }, "undefined field 'who'"},
		"bad match condition": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.MatchConditions[0].Expression = `object.metadata.name +`
		}, "spec.matchConditions[0].expression: Invalid value"},
		"variable name": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) { s.Variables[0].Name = "in" }, "must be a valid CEL identifier"},
		"no mutations":  {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) { s.Mutations = nil }, "spec.mutations: Required value"},
		"patch type":    {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) { s.Mutations[0].PatchType = "Merge" }, "spec.mutations[0].patchType: Unsupported value"},
		"both patches": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.Mutations[1].ApplyConfiguration = s.Mutations[0].ApplyConfiguration
		}, "must not be specified when patchType is JSONPatch"},
		"reinvocation": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) { s.ReinvocationPolicy = "" }, "spec.reinvocationPolicy: Required value"},
		"delete": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"DELETE"}
		}, "spec.matchConstraints.resourceRules.operations: Unsupported value"},
		"no resource rules": {func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) { s.MatchConstraints.ResourceRules = nil }, "spec.matchConstraints.resourceRules: Required value"},
	} {
		p := good()
		tc.change(&p.Spec)
		MutatingAdmissionPolicyRules.Default(p)
		errs := MutatingAdmissionPolicyRules.Validate(p)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", name, tc.want, errs)
		}
	}

	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "label"}}
	if errs := MutatingAdmissionPolicyBindingRules.Validate(b); len(errs) != 0 {
		t.Errorf("a binding naming only its policy refused: %v", errs)
	}
	b.Spec.PolicyName = ""
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "p"}
	got := MutatingAdmissionPolicyBindingRules.Validate(b).ToAggregate().Error()
	for _, want := range []string{"spec.policyName: Required value", "spec.paramRef.parameterNotFoundAction: Required value"} {
		if !strings.Contains(got, want) {
			t.Errorf("binding: want %q in %s", want, got)
		}
	}
}

// `kubectl get` of the validating and mutating policies and their bindings shows the same
// columns, each read from its own kind.
func TestAdmissionPolicyTables(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "p"}
	kind := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	ref := &admissionregistrationv1.ParamRef{Name: "cm", Namespace: "ns"}
	for _, c := range []struct {
		rules registry.Rules
		obj   runtime.Object
		want  []any
	}{
		{ValidatingAdmissionPolicyRules, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: meta,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{ParamKind: kind, Validations: make([]admissionregistrationv1.Validation, 2)}},
			[]any{"p", int64(2), "v1/ConfigMap", "<unknown>"}},
		{MutatingAdmissionPolicyRules, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: meta,
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{Mutations: make([]admissionregistrationv1.Mutation, 3)}},
			[]any{"p", int64(3), "<unset>", "<unknown>"}},
		{ValidatingAdmissionPolicyBindingRules, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: meta,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "pol", ParamRef: ref}},
			[]any{"p", "pol", "ns/cm", "<unknown>"}},
		{MutatingAdmissionPolicyBindingRules, &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: meta,
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "pol"}},
			[]any{"p", "pol", "<unset>", "<unknown>"}},
	} {
		if got := c.rules.Table.Row(c.obj); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%T row = %v, want %v", c.obj, got, c.want)
		}
		if n := len(c.rules.Table.Columns); n != len(c.want) {
			t.Errorf("%T has %d columns, want %d", c.obj, n, len(c.want))
		}
	}
}

// Unsupported enum values name the supported ones sorted, as kube's errors do.
func TestWebhookEnumErrorsSorted(t *testing.T) {
	url, bogus := "https://127.0.0.1:8443/validate", "Bogus"
	none := admissionregistrationv1.SideEffectClassNone
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "check"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "check.pods.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			FailurePolicy: (*admissionregistrationv1.FailurePolicyType)(&bogus), MatchPolicy: (*admissionregistrationv1.MatchPolicyType)(&bogus),
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"Bogus"},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: (*admissionregistrationv1.ScopeType)(&bogus)}}}}}}
	errs := ValidatingWebhookConfigurationRules.Validate(c)
	for path, want := range map[string]string{
		"webhooks[0].rules[0].operations[0]": `supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`,
		"webhooks[0].rules[0].scope":         `supported values: "*", "Cluster", "Namespaced"`,
		"webhooks[0].failurePolicy":          `supported values: "Fail", "Ignore"`,
		"webhooks[0].matchPolicy":            `supported values: "Equivalent", "Exact"`,
	} {
		registrytest.ExpectMessage(t, errs, path, want)
	}
}

// A mutating webhook's reinvocation policy and a binding's actions: sorted too, the
// policy checked before the client config, as kube-apiserver v1.36.3 answers.
func TestMutatingWebhookAndBindingEnumsAsKube(t *testing.T) {
	bogus, none, port := "Z", admissionregistrationv1.SideEffectClassNone, int32(0)
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mw1"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.b.c", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig:       admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n", Port: &port}},
			ReinvocationPolicy: (*admissionregistrationv1.ReinvocationPolicyType)(&bogus)}}}
	registrytest.ExpectErrorsInOrder(t, "mutating webhook", MutatingWebhookConfigurationRules.Validate(m),
		"webhooks[0].reinvocationPolicy: FieldValueNotSupported", "webhooks[0].clientConfig.service.port: FieldValueInvalid")
	registrytest.ExpectMessage(t, MutatingWebhookConfigurationRules.Validate(m), "webhooks[0].reinvocationPolicy", `supported values: "IfNeeded", "Never"`)

	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{"Nope"}}}
	registrytest.ExpectMessage(t, ValidatingAdmissionPolicyBindingRules.Validate(b), "spec.validationActions[0]", `supported values: "Audit", "Deny", "Warn"`)

	p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.ReinvocationPolicyType(bogus)}}
	registrytest.ExpectMessage(t, MutatingAdmissionPolicyRules.Validate(p), "spec.reinvocationPolicy", `supported values: "IfNeeded", "Never"`)
}

// A name in the suffix kube keeps for configurations read from files is warned of, on create
// and update, for each admission configuration kind, as kube-apiserver v1.36 does with the
// ManifestBasedAdmissionControlConfig gate off.
func TestStaticSuffixWarning(t *testing.T) {
	const want = `metadata.name: names ending with ".static.k8s.io" are reserved for static manifest-based configurations and cannot be managed via the API`
	for name, rules := range map[string]registry.Rules{
		"ValidatingWebhookConfiguration":   ValidatingWebhookConfigurationRules,
		"MutatingWebhookConfiguration":     MutatingWebhookConfigurationRules,
		"ValidatingAdmissionPolicy":        ValidatingAdmissionPolicyRules,
		"ValidatingAdmissionPolicyBinding": ValidatingAdmissionPolicyBindingRules,
		"MutatingAdmissionPolicy":          MutatingAdmissionPolicyRules,
		"MutatingAdmissionPolicyBinding":   MutatingAdmissionPolicyBindingRules,
	} {
		static := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "deny.static.k8s.io"}}
		if got := rules.Warnings(static, static); len(got) != 1 || got[0] != want {
			t.Errorf("%s: warnings %q, want %q", name, got, want)
		}
		static.Name = "deny.static.k8s.io.example.com"
		if got := rules.Warnings(static, nil); len(got) != 0 {
			t.Errorf("%s: warnings %q for a name that only contains the suffix", name, got)
		}
	}
}

// Policies and webhooks wrong in many places are answered as kube-apiserver v1.36.3
// answers them: a validation expression that does not compile is refused, and each
// webhook's review versions come after its client config and before its name's uniqueness.
func TestPolicyAndWebhookErrorsAsKube(t *testing.T) {
	fail, reason := admissionregistrationv1.FailurePolicyType("Sometimes"), metav1.StatusReason("Unauthorized")
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "vap"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: &fail,
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}}},
		Validations:      []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <", Reason: &reason, MessageExpression: "1 +"}},
		AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "a b", ValueExpression: "'x'"}},
	}}
	ValidatingAdmissionPolicyRules.Default(vap)
	var got []string
	for _, e := range ValidatingAdmissionPolicyRules.Validate(vap) {
		got = append(got, e.Field+": "+string(e.Type))
	}
	want := []string{"spec.failurePolicy: FieldValueNotSupported", "spec.validations[0].expression: FieldValueInvalid",
		"spec.validations[0].messageExpression: FieldValueInvalid", "spec.validations[0].reason: FieldValueNotSupported",
		"spec.auditAnnotations[0].key: FieldValueInvalid"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("policy errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	hook := func(name string, versions ...string) admissionregistrationv1.ValidatingWebhook {
		url := "https://x"
		return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}, AdmissionReviewVersions: versions}
	}
	first, second := hook("a.b.c"), hook("a.b.c", "v1", "v1", "V2")
	first.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}
	second.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNone)
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "vw"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{first, second}}
	ValidatingWebhookConfigurationRules.Default(config)
	registrytest.ExpectMessages(t, "webhooks", ValidatingWebhookConfigurationRules.Validate(config),
		"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
		`webhooks[0].namespaceSelector.matchLabels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		"webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
		`webhooks[1].admissionReviewVersions[1]: Invalid value: "v1": duplicate version`,
		`webhooks[1].admissionReviewVersions[2]: Invalid value: "V2": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
		`webhooks[1].name: Duplicate value: "a.b.c"`)
}
