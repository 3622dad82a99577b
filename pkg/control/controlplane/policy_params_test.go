package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// TestValidatingPolicyParamsOfNewCRD: a ValidatingAdmissionPolicy whose paramKind is a
// custom resource defined after the admission plugin first resolved a paramKind reads its
// params: the plugin's RESTMapper reads discovery again for a kind it does not know.
func TestValidatingPolicyParamsOfNewCRD(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	admin := c.adminConfig(t)
	policies := c.client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := c.client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	cms := c.client.CoreV1().ConfigMaps("default")
	// policy makes a policy on ConfigMaps named data-N that refuses more keys than the
	// param's field allows, and its binding to the param.
	policy := func(name string, kind admissionregistrationv1.ParamKind, ref *admissionregistrationv1.ParamRef, expr string) {
		t.Helper()
		_, err := policies.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				ParamKind: &kind,
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "data", Expression: `object.metadata.name.startsWith("data-")`}},
				Validations:     []admissionregistrationv1.Validation{{Expression: expr, Message: name + " refuses it"}},
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bindings.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ParamRef: ref,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	// await polls the create of a ConfigMap with keys keys until its error contains want
	// ("" for none); policies take effect within a moment.
	await := func(name string, keys int, want string) {
		t.Helper()
		data := map[string]string{}
		for i := range keys {
			data[string(rune('a'+i))] = "x"
		}
		var err error
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
			if err == nil {
				_ = cms.Delete(ctx, name, metav1.DeleteOptions{})
			}
			if (want == "" && err == nil) || (want != "" && err != nil && strings.Contains(err.Error(), want)) {
				return
			}
		}
		t.Fatalf("create %s with %d keys: %v, want %q", name, keys, err, want)
	}

	// A first policy with a built-in paramKind fills the plugin's mapper.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limit"}, Data: map[string]string{"max": "3"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy("by-configmap", admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
		&admissionregistrationv1.ParamRef{Name: "limit", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
		`object.data.size() <= int(params.data.max)`)
	await("data-1", 4, "by-configmap refuses it")

	// Then a CRD, one of its objects, and a policy taking it as params.
	crds := crdclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions()
	_, err := crds.Create(ctx, schemalessCRD("params.example.com", "limits", "Limit", apiextensionsv1.NamespaceScoped), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.waitEstablished(t, "crd/limits.params.example.com")
	limits := customResources(admin, "params.example.com", "v1", "limits")
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err = limits.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "params.example.com/v1", "kind": "Limit",
			"metadata": map[string]any{"name": "two"}, "max": int64(2)}}, metav1.CreateOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	policy("by-limit", admissionregistrationv1.ParamKind{APIVersion: "params.example.com/v1", Kind: "Limit"},
		&admissionregistrationv1.ParamRef{Name: "two", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
		`object.data.size() <= params.max`)
	await("data-2", 3, "by-limit refuses it")
	await("data-3", 2, "")
}
