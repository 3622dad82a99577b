package controlplane

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMutatingAdmissionPolicy: through client-go, a MutatingAdmissionPolicy bound to one
// namespace labels the ConfigMaps created there (ApplyConfiguration), another copies a
// param's value in (JSONPatch, paramRef), a matchCondition leaves one out, and other
// namespaces are untouched; a policy whose CEL does not compile is refused when created.
func TestMutatingAdmissionPolicy(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	for _, ns := range []string{"mutated", "plain"} {
		if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.client.CoreV1().ConfigMaps("plain").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policies := c.client.AdmissionregistrationV1().MutatingAdmissionPolicies()
	bindings := c.client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	configMaps := admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		},
	}}}
	policy := func(name string, m admissionregistrationv1.Mutation) *admissionregistrationv1.MutatingAdmissionPolicy {
		return &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConstraints:   configMaps.DeepCopy(),
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				Mutations:          []admissionregistrationv1.Mutation{m},
			},
		}
	}

	bad := policy("bad", admissionregistrationv1.Mutation{
		PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"a": nosuchvariable}}}`},
	})
	_, err := policies.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.mutations[0].applyConfiguration.expression: Invalid value") ||
		!strings.Contains(err.Error(), "undeclared reference to 'nosuchvariable'") {
		t.Errorf("a policy whose CEL does not compile: %v", err)
	}

	label := policy("label", admissionregistrationv1.Mutation{
		PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"mutated-by": "policy"}}}`},
	})
	label.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-skipped", Expression: `object.metadata.name != "skip-me"`}}
	color := policy("color", admissionregistrationv1.Mutation{
		PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/data/color", value: params.data.color}]`},
	})
	color.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	for _, p := range []*admissionregistrationv1.MutatingAdmissionPolicy{label, color} {
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	onlyMutated := &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "mutated"}}}
	deny := admissionregistrationv1.DenyAction
	for _, b := range []*admissionregistrationv1.MutatingAdmissionPolicyBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "label"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "label", MatchResources: onlyMutated}},
		{ObjectMeta: metav1.ObjectMeta{Name: "color"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "color", MatchResources: onlyMutated,
			ParamRef: &admissionregistrationv1.ParamRef{Name: "settings", Namespace: "plain", ParameterNotFoundAction: &deny}}},
	} {
		if _, err := bindings.Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	create := func(ns, name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ConfigMap %s/%s: %v", ns, name, err)
		}
		return cm
	}
	// The plugin sees the policies and bindings once its informers have them. Until it has
	// first read the served OpenAPI schemas (at most 5 s after miniapi starts, as
	// kube-apiserver's), an ApplyConfiguration is refused with 503.
	var cm *corev1.ConfigMap
	i := 0
	waitFor(t, "both policies to mutate a ConfigMap", func() bool {
		i++
		var err error
		cm, err = c.client.CoreV1().ConfigMaps("mutated").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
		if apierrors.IsServiceUnavailable(err) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return cm.Labels["mutated-by"] == "policy" && cm.Data["color"] == "blue"
	})
	if cm.Data["k"] != "v" {
		t.Errorf("the mutations lost the ConfigMap's own data: %v", cm.Data)
	}
	if got, err := c.client.CoreV1().ConfigMaps("mutated").Get(ctx, cm.Name, metav1.GetOptions{}); err != nil || got.Labels["mutated-by"] != "policy" {
		t.Errorf("the stored ConfigMap lacks the policy's label: %v %v", got.Labels, err)
	}
	if skipped := create("mutated", "skip-me"); skipped.Labels["mutated-by"] != "" || skipped.Data["color"] != "blue" {
		t.Errorf("the matchCondition did not keep the label policy from skip-me (labels %v), or kept the other one (data %v)", skipped.Labels, skipped.Data)
	}
	if other := create("plain", "other"); len(other.Labels) != 0 || other.Data["color"] != "" {
		t.Errorf("a ConfigMap of an unbound namespace was mutated: %v %v", other.Labels, other.Data)
	}

	if out := c.mustKubectl(t, "", "get", "mutatingadmissionpolicies"); !regexpLine(out, `^color\s+1\s+v1/ConfigMap\s`) || !regexpLine(out, `^label\s+1\s+<unset>\s`) {
		t.Errorf("kubectl get mutatingadmissionpolicies:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "get", "mutatingadmissionpolicybindings"); !regexpLine(out, `^color\s+color\s+plain/settings\s`) {
		t.Errorf("kubectl get mutatingadmissionpolicybindings:\n%s", out)
	}
}
