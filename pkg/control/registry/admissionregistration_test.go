package registry

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	validatingWebhookConfigurationRules.Default(c)
	w := c.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		w.NamespaceSelector == nil || w.ObjectSelector == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("defaults: %+v", w)
	}
	if errs := validatingWebhookConfigurationRules.Validate(c); len(errs) != 0 {
		t.Errorf("a valid configuration refused: %v", errs)
	}
	for name, tc := range map[string]struct {
		change func(w *admissionregistrationv1.ValidatingWebhook)
		want   string
	}{
		"two segments":    {func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "check.pods" }, "webhooks[0].name: Invalid value"},
		"http":            {func(w *admissionregistrationv1.ValidatingWebhook) { u := "http://x.example/"; w.ClientConfig.URL = &u }, "'https' is the only allowed URL scheme"},
		"no clientConfig": {func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = nil }, "exactly one of url or service is required"},
		"no sideEffects":  {func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil }, "webhooks[0].sideEffects: Required value"},
		"no v1 reviews":   {func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v2"} }, `must include at least one of "v1", "v1beta1"`},
		"timeout":         {func(w *admissionregistrationv1.ValidatingWebhook) { s := int32(31); w.TimeoutSeconds = &s }, "the timeout value must be between 1 and 30 seconds"},
		"operation": {func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"}
		}, "webhooks[0].rules[0].operations[0]: Unsupported value"},
	} {
		c := good()
		tc.change(&c.Webhooks[0])
		errs := validatingWebhookConfigurationRules.Validate(c)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", name, tc.want, errs)
		}
	}
}
