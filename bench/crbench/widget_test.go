package main

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The load is what the benchmark says only if every create sets the schema's 20 fields
// and passes the rule, and the invalid Widget breaks only the rule.
func TestWidgetSetsEveryField(t *testing.T) {
	props := widgetCRD().Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
	if len(props) != 20 {
		t.Fatalf("the schema's spec has %d fields, want 20", len(props))
	}
	for i := range int64(25) {
		spec := widget("ns", "w", i).Object["spec"].(map[string]any)
		if len(spec) != len(props) {
			t.Fatalf("widget %d sets %d fields, want %d", i, len(spec), len(props))
		}
		for name := range spec {
			if _, ok := props[name]; !ok {
				t.Errorf("widget sets %q, not in the schema", name)
			}
		}
		if spec["replicas"].(int64) > spec["maxReplicas"].(int64) {
			t.Errorf("widget %d breaks %s", i, celRule)
		}
	}
	bad := invalidWidget("ns").Object["spec"].(map[string]any)
	if bad["replicas"].(int64) <= bad["maxReplicas"].(int64) {
		t.Errorf("invalidWidget keeps %s", celRule)
	}
}

func TestRefusal(t *testing.T) {
	gk := schema.GroupKind{Group: group, Kind: kind}
	invalid := apierrors.NewInvalid(gk, "invalid", field.ErrorList{field.Invalid(field.NewPath("spec"), "object", celError)})
	if got, err := refusal(invalid); err != nil || got == "" {
		t.Errorf("refusal(422 with the rule's message) = %q, %v; want it accepted", got, err)
	}
	for _, err := range []error{
		nil,
		errors.New("connection refused"),
		apierrors.NewInvalid(gk, "invalid", field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), 20, "too many")}),
		apierrors.NewGenericServerResponse(http.StatusInternalServerError, "POST", schema.GroupResource{}, "", celError, 0, false),
	} {
		if _, got := refusal(err); got == nil {
			t.Errorf("refusal(%v) accepted", fmt.Sprint(err))
		}
	}
}
