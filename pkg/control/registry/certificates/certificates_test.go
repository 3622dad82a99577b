package certificates

import (
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestPreserveApprovalConditions: a status update keeps the stored Approved condition in
// the place the update gives it, so a condition the update appends stays last (the CSR
// conformance test reads it there); one added or removed is left for validation.
func TestPreserveApprovalConditions(t *testing.T) {
	cond := func(typ certificatesv1.RequestConditionType, msg string) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: corev1.ConditionTrue, Message: msg}
	}
	csr := func(cs ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: cs}}
	}
	old := csr(cond("ApprovalPatch", ""), cond(certificatesv1.CertificateApproved, "stored"))
	updated := csr(cond("ApprovalPatch", ""), cond(certificatesv1.CertificateApproved, "changed"), cond("StatusUpdate", ""))
	preserveConditions(updated, old, certificatesv1.CertificateApproved)
	want := []certificatesv1.CertificateSigningRequestCondition{cond("ApprovalPatch", ""), cond(certificatesv1.CertificateApproved, "stored"), cond("StatusUpdate", "")}
	if !slices.Equal(updated.Status.Conditions, want) {
		t.Errorf("conditions %+v, want %+v", updated.Status.Conditions, want)
	}
	removed := csr(cond("StatusUpdate", ""))
	preserveConditions(removed, old, certificatesv1.CertificateApproved)
	if len(removed.Status.Conditions) != 1 {
		t.Errorf("an update removing Approved got %+v back, want it left for validation", removed.Status.Conditions)
	}
}

// TestConditionErrorsAsKube: kube-apiserver v1.36.3's answer to an approval that both
// approves and denies names the conditions list, not the condition.
func TestConditionErrorsAsKube(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
		{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}, {Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}}}
	var got []string
	for _, e := range validateConditions(field.NewPath("status", "conditions"), csr) {
		got = append(got, e.Error())
	}
	if want := []string{`status.conditions: Invalid value: "Denied": Approved and Denied conditions are mutually exclusive`}; !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
}
