// Package apitest holds what the tests of the REST layer's packages share: reading the
// answers the server writes and the managed fields it records.
package apitest

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// DecodeStrict decodes a response body, failing on fields the type does not have.
func DecodeStrict(t *testing.T, body []byte, into any) {
	t.Helper()
	strict, err := kjson.UnmarshalStrict(body, into)
	if err != nil || len(strict) > 0 {
		t.Fatalf("decode %T: %v %v\n%s", into, err, strict, body)
	}
}

// ResponseStatus is the Status an error response carries, failing t when the body is not
// one: kube's responsewriters.ErrorNegotiated answers every API error with a v1 Status.
func ResponseStatus(t *testing.T, body []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	DecodeStrict(t, body, &st)
	if st.Kind != "Status" || st.APIVersion != "v1" {
		t.Fatalf("not a Status: %s", body)
	}
	return st
}

// ManagerEntry is the managed fields entry of manager in obj, nil if it has none.
func ManagerEntry(obj metav1.Object, manager string) *metav1.ManagedFieldsEntry {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager {
			return &m
		}
	}
	return nil
}
