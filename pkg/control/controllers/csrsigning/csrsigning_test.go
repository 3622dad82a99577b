package csrsigning

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/pki"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

func TestDurationAndValidity(t *testing.T) {
	c := &Controller{duration: 24 * time.Hour}
	for _, tc := range []struct {
		requested *int32
		want      time.Duration
	}{{nil, 24 * time.Hour}, {ptr.To[int32](3600), time.Hour}, {ptr.To[int32](60), 10 * time.Minute}, {ptr.To[int32](7 * 86400), 24 * time.Hour}} {
		if got := c.ttl(tc.requested); got != tc.want {
			t.Errorf("ttl(%v) = %v, want %v", tc.requested, got, tc.want)
		}
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ttl                 time.Duration
		notBefore, notAfter time.Duration // from now
	}{
		{24 * time.Hour, -5 * time.Minute, 24*time.Hour - 5*time.Minute}, // long: the end is backdated too
		{time.Hour, -5 * time.Minute, time.Hour},                         // short: it is not
		{time.Minute, -6 * time.Second, time.Minute},                     // a test's: a tenth
	} {
		nb, na := Validity(now, tc.ttl)
		if nb.Sub(now) != tc.notBefore || na.Sub(now) != tc.notAfter {
			t.Errorf("Validity(%v) = %v .. %v from now, want %v .. %v", tc.ttl, nb.Sub(now), na.Sub(now), tc.notBefore, tc.notAfter)
		}
	}
}

// Approved requests are signed with the CA as their signer allows; a request that does not
// fit its signer gets a Failed condition; others' signers and unapproved ones are left alone.
func TestSigning(t *testing.T) {
	ca, err := pki.EnsureCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	approved := certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: "True"}}}
	mk := func(name string, tmpl *x509.CertificateRequest, signer string, usages []certificatesv1.KeyUsage, status certificatesv1.CertificateSigningRequestStatus) *certificatesv1.CertificateSigningRequest {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		req, err := certutil.MakeCSRFromTemplate(key, tmpl)
		if err != nil {
			t.Fatal(err)
		}
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: req, SignerName: signer, Usages: usages}, Status: status}
	}
	node := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	client := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	objs := []*certificatesv1.CertificateSigningRequest{
		mk("serving", &x509.CertificateRequest{Subject: node, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}, DNSNames: []string{"n1"}}, certificatesv1.KubeletServingSignerName, serving, approved),
		mk("serving-no-san", &x509.CertificateRequest{Subject: node}, certificatesv1.KubeletServingSignerName, serving, approved),
		mk("client", &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane", Organization: []string{"devs"}}}, certificatesv1.KubeAPIServerClientSignerName, client, approved),
		mk("client-server-usage", &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane"}}, certificatesv1.KubeAPIServerClientSignerName, serving, approved),
		mk("pending", &x509.CertificateRequest{Subject: node}, certificatesv1.KubeAPIServerClientKubeletSignerName, client, certificatesv1.CertificateSigningRequestStatus{}),
		mk("foreign", &x509.CertificateRequest{Subject: node}, "example.com/other", client, approved),
	}
	cs := fake.NewClientset()
	for _, o := range objs {
		if _, err := cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(cs, factory.Certificates().V1().CertificateSigningRequests(), ca, 24*time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := controllertest.StartInformers(t, factory)
	get := func(name string) *certificatesv1.CertificateSigningRequest {
		if _, err := c.sync(ctx, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		return got
	}
	cert := func(csr *certificatesv1.CertificateSigningRequest) *x509.Certificate {
		block, _ := pem.Decode(csr.Status.Certificate)
		if block == nil {
			t.Fatalf("%s: no certificate", csr.Name)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: ca.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s: not signed by the CA: %v", csr.Name, err)
		}
		return c
	}
	failed := func(csr *certificatesv1.CertificateSigningRequest) string {
		for _, cond := range csr.Status.Conditions {
			if cond.Type == certificatesv1.CertificateFailed && cond.Reason == "SignerValidationFailure" {
				return cond.Message
			}
		}
		return ""
	}
	if s := cert(get("serving")); s.Subject.CommonName != "system:node:n1" || len(s.IPAddresses) != 1 || s.DNSNames[0] != "n1" ||
		len(s.ExtKeyUsage) != 1 || s.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth || s.IsCA {
		t.Errorf("serving certificate %+v", s)
	}
	if msg := failed(get("serving-no-san")); msg != "DNS or IP subjectAltName is required" {
		t.Errorf("serving without SANs: Failed %q", msg)
	}
	if s := cert(get("client")); s.Subject.CommonName != "jane" || s.Subject.Organization[0] != "devs" || s.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("client certificate %+v", s.Subject)
	}
	if msg := failed(get("client-server-usage")); msg != "invalid usage for client certificate: server auth" {
		t.Errorf("client with server usage: Failed %q", msg)
	}
	for _, name := range []string{"pending", "foreign"} {
		if got := get(name); len(got.Status.Certificate) > 0 || failed(got) != "" {
			t.Errorf("%s should be left alone: %+v", name, got.Status)
		}
	}
}
