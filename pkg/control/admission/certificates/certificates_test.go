package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	certutil "k8s.io/client-go/util/cert"
)

var csrs = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")

// grants allows "verb signerName" pairs for user cora and nothing else.
type grants map[string]bool

func (g grants) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == "cora" && a.GetResource() == "signers" && a.GetAPIGroup() == "certificates.k8s.io" &&
			g[a.GetVerb()+" "+a.GetName()] {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func csr(signer string, cert []byte) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "req"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer}, Status: certificatesv1.CertificateSigningRequestStatus{Certificate: cert}}
}

var cora = authn.WithUser(context.Background(), authn.User{Name: "cora", Groups: []string{"system:authenticated"}})

func TestApproval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grants grants
		signer string
		sub    string
		want   string // "" admitted
	}{
		{"no approve", grants{}, "example.com/widgets", "approval", `certificatesigningrequests.certificates.k8s.io "req" is forbidden: user not permitted to approve requests with signerName "example.com/widgets"`},
		{"approve on the signer", grants{"approve example.com/widgets": true}, "example.com/widgets", "approval", ""},
		{"approve on the domain", grants{"approve example.com/*": true}, "example.com/widgets", "approval", ""},
		{"approve on another signer", grants{"approve example.com/gadgets": true}, "example.com/widgets", "approval", "user not permitted to approve"},
		{"sign is not approve", grants{"sign example.com/widgets": true}, "example.com/widgets", "approval", "user not permitted to approve"},
		{"status is not approval", grants{}, "example.com/widgets", "status", ""},
		{"the object itself", grants{}, "example.com/widgets", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The stored request's signer counts, not what the update claims.
			a := admissiontest.Attrs(t, generic.Update, csrs, tc.sub, csr("example.com/other", nil), csr(tc.signer, nil))
			checkRefusal(t, Approval{Authorizer: tc.grants.authorizer()}.Validate(cora, a), tc.want)
		})
	}
}

func TestSigning(t *testing.T) {
	cert, _, err := certutil.GenerateSelfSignedCertKey("x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		grants    grants
		sub       string
		old, cert []byte
		want      string
	}{
		{"no sign", grants{}, "status", nil, cert, `certificatesigningrequests.certificates.k8s.io "req" is forbidden: user not permitted to sign requests with signerName "example.com/widgets"`},
		{"sign on the signer", grants{"sign example.com/widgets": true}, "status", nil, cert, ""},
		{"sign on the domain", grants{"sign example.com/*": true}, "status", nil, cert, ""},
		{"approve is not sign", grants{"approve example.com/widgets": true}, "status", nil, cert, "user not permitted to sign"},
		{"certificate unchanged (conditions only)", grants{}, "status", cert, cert, ""},
		{"no certificate set", grants{}, "status", nil, nil, ""},
		{"approval subresource", grants{}, "approval", nil, cert, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := admissiontest.Attrs(t, generic.Update, csrs, tc.sub, csr("example.com/widgets", tc.cert), csr("example.com/widgets", tc.old))
			checkRefusal(t, Signing{Authorizer: tc.grants.authorizer()}.Validate(cora, a), tc.want)
		})
	}
}

func TestSubjectRestriction(t *testing.T) {
	request := func(orgs ...string) []byte {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		req, err := certutil.MakeCSR(key, &pkix.Name{CommonName: "root", Organization: orgs}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	for _, tc := range []struct {
		name    string
		op      generic.Operation
		signer  string
		request []byte
		want    string
	}{
		{"masters for kube-apiserver-client", generic.Create, certificatesv1.KubeAPIServerClientSignerName, request("devs", "system:masters"),
			`certificatesigningrequests.certificates.k8s.io "req" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`},
		{"other groups", generic.Create, certificatesv1.KubeAPIServerClientSignerName, request("devs"), ""},
		{"masters for another signer", generic.Create, "example.com/widgets", request("system:masters"), ""},
		{"unparseable", generic.Create, certificatesv1.KubeAPIServerClientSignerName, []byte("junk"), "failed to parse CSR: PEM block type must be CERTIFICATE REQUEST"},
		{"updates are not checked", generic.Update, certificatesv1.KubeAPIServerClientSignerName, request("system:masters"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := csr(tc.signer, nil)
			obj.Spec.Request = tc.request
			var old runtime.Object
			if tc.op == generic.Update {
				old = obj.DeepCopy()
			}
			a := admissiontest.Attrs(t, tc.op, csrs, "", obj, old)
			checkRefusal(t, SubjectRestriction{}.Validate(cora, a), tc.want)
		})
	}
}

func checkRefusal(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("refused: %v", err)
	case want != "" && (err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want)):
		t.Errorf("got %v, want Forbidden %q", err, want)
	}
}
