package csrapproving

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	certutil "k8s.io/client-go/util/cert"
)

func request(t *testing.T, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := certutil.MakeCSRFromTemplate(key, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return pem
}

var clientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// The approver's rules over the requests a kubelet and others send; the
// SubjectAccessReview answers as the bootstrap policy binds nodeclient (to
// system:bootstrappers) and selfnodeclient (to system:nodes).
func TestApproverRules(t *testing.T) {
	node := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	bootstrapper := []string{"system:bootstrappers", "system:authenticated"}
	nodes := []string{"system:nodes", "system:authenticated"}
	for _, tc := range []struct {
		name     string
		user     string
		groups   []string
		tmpl     x509.CertificateRequest
		signer   string
		usages   []certificatesv1.KeyUsage
		status   certificatesv1.CertificateSigningRequestStatus
		approved string // the condition message, "" for none
		sars     []string
	}{
		{name: "bootstrap token, new node", user: "system:bootstrap:abcdef", groups: bootstrapper, tmpl: x509.CertificateRequest{Subject: node},
			approved: "Auto approving kubelet client certificate after SubjectAccessReview.", sars: []string{"nodeclient"}},
		{name: "node renewing its own", user: "system:node:n1", groups: nodes, tmpl: x509.CertificateRequest{Subject: node},
			approved: "Auto approving self kubelet client certificate after SubjectAccessReview.", sars: []string{"selfnodeclient"}},
		{name: "node asking for another node", user: "system:node:n2", groups: nodes, tmpl: x509.CertificateRequest{Subject: node},
			sars: []string{"nodeclient"}},
		{name: "RSA usages too", user: "system:bootstrap:abcdef", groups: bootstrapper, tmpl: x509.CertificateRequest{Subject: node},
			usages:   []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			approved: "Auto approving kubelet client certificate after SubjectAccessReview.", sars: []string{"nodeclient"}},
		{name: "other signer", user: "system:bootstrap:abcdef", groups: bootstrapper, tmpl: x509.CertificateRequest{Subject: node},
			signer: certificatesv1.KubeAPIServerClientSignerName},
		{name: "not system:nodes", user: "system:bootstrap:abcdef", groups: bootstrapper,
			tmpl: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes", "system:masters"}}}},
		{name: "not a node name", user: "system:bootstrap:abcdef", groups: bootstrapper,
			tmpl: x509.CertificateRequest{Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:nodes"}}}},
		{name: "with a DNS name", user: "system:bootstrap:abcdef", groups: bootstrapper,
			tmpl: x509.CertificateRequest{Subject: node, DNSNames: []string{"n1"}}},
		{name: "server usage", user: "system:bootstrap:abcdef", groups: bootstrapper, tmpl: x509.CertificateRequest{Subject: node},
			usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}},
		{name: "already denied", user: "system:bootstrap:abcdef", groups: bootstrapper, tmpl: x509.CertificateRequest{Subject: node},
			status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: "True"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.signer == "" {
				tc.signer = certificatesv1.KubeAPIServerClientKubeletSignerName
			}
			if tc.usages == nil {
				tc.usages = clientUsages
			}
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-1"},
				Spec: certificatesv1.CertificateSigningRequestSpec{Request: request(t, &tc.tmpl), SignerName: tc.signer,
					Usages: tc.usages, Username: tc.user, Groups: tc.groups},
				Status: tc.status}
			client := fake.NewClientset(csr)
			var sars []string
			client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
				ra := sar.Spec.ResourceAttributes
				sars = append(sars, ra.Subresource)
				in := func(g string) bool {
					for _, x := range sar.Spec.Groups {
						if x == g {
							return true
						}
					}
					return false
				}
				sar.Status.Allowed = ra.Verb == "create" && ra.Group == "certificates.k8s.io" && ra.Resource == "certificatesigningrequests" &&
					(ra.Subresource == "nodeclient" && in("system:bootstrappers") || ra.Subresource == "selfnodeclient" && in("system:nodes"))
				return true, sar, nil
			})
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, factory.Certificates().V1().CertificateSigningRequests(), slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			ctx := controllertest.StartInformers(t, factory)
			if _, err := c.sync(ctx, "csr-1"); err != nil {
				t.Fatal(err)
			}
			got, _ := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr-1", metav1.GetOptions{})
			var message string
			for _, cond := range got.Status.Conditions {
				if cond.Type == certificatesv1.CertificateApproved {
					if cond.Reason != "AutoApproved" || cond.Status != "True" {
						t.Errorf("condition %+v", cond)
					}
					message = cond.Message
				}
			}
			if message != tc.approved {
				t.Errorf("approval %q, want %q", message, tc.approved)
			}
			if len(sars) != len(tc.sars) || (len(sars) > 0 && sars[0] != tc.sars[0]) {
				t.Errorf("SubjectAccessReviews for %v, want %v", sars, tc.sars)
			}
		})
	}
}
