package apiregistration

import (
	"testing"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// The Available column as kube-aggregator prints it: a reason only when not True.
func TestAvailableColumn(t *testing.T) {
	for _, tc := range []struct {
		cond *apiregistrationv1.APIServiceCondition
		want string
	}{
		{nil, "Unknown"},
		{&apiregistrationv1.APIServiceCondition{Status: apiregistrationv1.ConditionTrue, Reason: "Local"}, "True"},
		{&apiregistrationv1.APIServiceCondition{Status: apiregistrationv1.ConditionFalse, Reason: "ServiceNotFound"}, "False (ServiceNotFound)"},
		{&apiregistrationv1.APIServiceCondition{Status: apiregistrationv1.ConditionFalse}, "False"},
	} {
		svc := &apiregistrationv1.APIService{}
		if tc.cond != nil {
			c := *tc.cond
			c.Type = apiregistrationv1.Available
			svc.Status.Conditions = []apiregistrationv1.APIServiceCondition{c}
		}
		if got := APIServiceRules.Table.Row(svc)[2]; got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.cond, got, tc.want)
		}
	}
}
