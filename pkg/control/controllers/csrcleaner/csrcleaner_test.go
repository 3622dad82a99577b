package csrcleaner

import (
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/pki"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpired(t *testing.T) {
	now := time.Now()
	ca, err := pki.EnsureCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	short, err := ca.IssueServingFor("x", []string{"x"}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	long, err := ca.IssueServingFor("y", []string{"y"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	c := &Controller{now: func() time.Time { return now.Add(time.Second) }}
	cond := func(t certificatesv1.RequestConditionType, ago time.Duration) certificatesv1.CertificateSigningRequestStatus {
		return certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
			{Type: t, Status: "True", LastUpdateTime: metav1.NewTime(now.Add(-ago))}}}
	}
	issued := func(s certificatesv1.CertificateSigningRequestStatus) certificatesv1.CertificateSigningRequestStatus {
		s.Certificate = long.CertPEM
		return s
	}
	for _, tc := range []struct {
		name    string
		created time.Duration // ago
		status  certificatesv1.CertificateSigningRequestStatus
		due     bool
	}{
		{"pending an hour", time.Hour, certificatesv1.CertificateSigningRequestStatus{}, false},
		{"pending two days", 48 * time.Hour, certificatesv1.CertificateSigningRequestStatus{}, true},
		{"approved a minute ago", 2 * time.Hour, cond(certificatesv1.CertificateApproved, time.Minute), false},
		{"approved and issued two hours ago", 2 * time.Hour, issued(cond(certificatesv1.CertificateApproved, 2*time.Hour)), true},
		// As kube's isApprovedUnissuedPastDeadline: approved with no certificate yet (its
		// signer may be slow or external) waits a day, not an hour.
		{"approved two hours ago, not issued", 2 * time.Hour, cond(certificatesv1.CertificateApproved, 2*time.Hour), false},
		{"approved two days ago, not issued", 49 * time.Hour, cond(certificatesv1.CertificateApproved, 48*time.Hour), true},
		{"approved, failed two hours ago", 2 * time.Hour, certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
			{Type: certificatesv1.CertificateApproved, Status: "True", LastUpdateTime: metav1.NewTime(now.Add(-2 * time.Hour))},
			{Type: certificatesv1.CertificateFailed, Status: "True", LastUpdateTime: metav1.NewTime(now.Add(-2 * time.Hour))}}}, true},
		{"denied two hours ago", 2 * time.Hour, cond(certificatesv1.CertificateDenied, 2*time.Hour), true},
		{"failed two hours ago", 2 * time.Hour, cond(certificatesv1.CertificateFailed, 2*time.Hour), true},
		{"certificate expired", time.Minute, certificatesv1.CertificateSigningRequestStatus{Certificate: short.CertPEM}, true},
	} {
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: tc.name, CreationTimestamp: metav1.NewTime(now.Add(-tc.created))}, Status: tc.status}
		if why := c.expired(csr); (why != "") != tc.due {
			t.Errorf("%s: expired = %q, want due %v", tc.name, why, tc.due)
		}
	}
}
