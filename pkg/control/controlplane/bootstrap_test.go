package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/utils/ptr"
)

// createBootstrapToken makes a bootstrap token the way docs/security.md tells users to:
// one kubectl command, kubeadm's Secret format.
func createBootstrapToken(t *testing.T, c *cluster, id, secret, expiration string) {
	t.Helper()
	c.mustKubectl(t, "", "-n", "kube-system", "create", "secret", "generic", "bootstrap-token-"+id,
		"--type", "bootstrap.kubernetes.io/token",
		"--from-literal", "token-id="+id, "--from-literal", "token-secret="+secret,
		"--from-literal", "expiration="+expiration,
		"--from-literal", "usage-bootstrap-authentication=true", "--from-literal", "usage-bootstrap-signing=true",
		"--from-literal", "description=test token")
}

// restConfig is the admin kubeconfig's server and CA with other credentials.
func (c *cluster) restConfig(t *testing.T, token string, certPEM, keyPEM []byte) *rest.Config {
	t.Helper()
	admin := c.adminConfig(t)
	return &rest.Config{Host: admin.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CertData: certPEM, KeyData: keyPEM}}
}

func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func whoami(t *testing.T, cs kubernetes.Interface) (string, []string, error) {
	t.Helper()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, err
	}
	return r.Status.UserInfo.Username, r.Status.UserInfo.Groups, nil
}

// requestCertificate sends a CSR for subject as cs and waits for its certificate.
func requestCertificate(t *testing.T, cs kubernetes.Interface, signer string, subject pkix.Name, usages []certificatesv1.KeyUsage, d *time.Duration) (string, []byte, []byte, error) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	req, err := certutil.MakeCSR(key, &subject, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	name, uid, err := csr.RequestCertificateWithContext(context.Background(), cs, req, "", signer, d, usages, key)
	if err != nil {
		return "", nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cert, err := csr.WaitForCertificate(ctx, cs, name, uid)
	der, _ := x509.MarshalECPrivateKey(key)
	return name, cert, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), err
}

var nodeClientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// TLS bootstrapping against a real miniapi: a bootstrap token gets a node client
// certificate approved and signed with no one's help; the node renews it itself; tokens
// that are wrong, expired or not for authentication get 401.
func TestNodeBootstrapWithToken(t *testing.T) {
	c := startClusterWith(t, func(o *Options) { o.ClusterSigningDuration = 2 * time.Hour })
	createBootstrapToken(t, c, "abcdef", "0123456789abcdef", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	createBootstrapToken(t, c, "expird", "0123456789abcdef", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))

	boot := clientFor(t, c.restConfig(t, "abcdef.0123456789abcdef", nil, nil))
	var user string
	var groups []string
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) { // the token cache is an informer
		if user, groups, err = whoami(t, boot); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || user != "system:bootstrap:abcdef" || !strings.Contains(strings.Join(groups, ","), "system:bootstrappers") {
		t.Fatalf("bootstrap token is %q in %v (%v), want system:bootstrap:abcdef in system:bootstrappers", user, groups, err)
	}
	for _, bad := range []string{"abcdef.0123456789abcdee", "expird.0123456789abcdef", "zzzzzz.0123456789abcdef"} {
		if _, _, err := whoami(t, clientFor(t, c.restConfig(t, bad, nil, nil))); !apierrors.IsUnauthorized(err) {
			t.Errorf("token %s: err %v, want 401", bad, err)
		}
	}
	// A bootstrapper may do nothing but CSRs.
	if _, err := boot.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bootstrap token listing secrets: %v, want 403", err)
	}

	name, certPEM, keyPEM, err := requestCertificate(t, boot, certificatesv1.KubeAPIServerClientKubeletSignerName,
		pkix.Name{CommonName: "system:node:joiner", Organization: []string{"system:nodes"}}, nodeClientUsages, nil)
	if err != nil {
		t.Fatalf("node client certificate through the bootstrap token: %v", err)
	}
	got, err := c.client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Username != "system:bootstrap:abcdef" {
		t.Errorf("spec.username = %q, want the requester system:bootstrap:abcdef", got.Spec.Username)
	}
	if cond := got.Status.Conditions; len(cond) != 1 || cond[0].Reason != "AutoApproved" ||
		cond[0].Message != "Auto approving kubelet client certificate after SubjectAccessReview." {
		t.Errorf("conditions %+v, want one AutoApproved (nodeclient)", cond)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if life := time.Until(cert.NotAfter); life < 115*time.Minute || life > 2*time.Hour {
		t.Errorf("certificate lives %v more, want --cluster-signing-duration (2h)", life)
	}
	node := clientFor(t, c.restConfig(t, "", certPEM, keyPEM))
	if user, groups, err := whoami(t, node); err != nil || user != "system:node:joiner" || !strings.Contains(strings.Join(groups, ","), "system:nodes") {
		t.Fatalf("signed certificate is %q in %v (%v), want system:node:joiner", user, groups, err)
	}

	// Rotation: the node renews its own certificate (selfnodeclient), asking for less time.
	_, renewed, _, err := requestCertificate(t, node, certificatesv1.KubeAPIServerClientKubeletSignerName,
		pkix.Name{CommonName: "system:node:joiner", Organization: []string{"system:nodes"}}, nodeClientUsages, ptr.To(20*time.Minute))
	if err != nil {
		t.Fatalf("renewal by the node itself: %v", err)
	}
	block, _ = pem.Decode(renewed)
	if cert, err = x509.ParseCertificate(block.Bytes); err != nil {
		t.Fatal(err)
	}
	if life := time.Until(cert.NotAfter); life < 19*time.Minute || life > 20*time.Minute {
		t.Errorf("renewed certificate lives %v more, want the requested 20m", life)
	}
	// ... but not another node's: that request stays pending.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	req, _ := certutil.MakeCSR(key, &pkix.Name{CommonName: "system:node:other", Organization: []string{"system:nodes"}}, nil, nil)
	other, _, err := csr.RequestCertificateWithContext(context.Background(), node, req, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, nodeClientUsages, key)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if out := c.mustKubectl(t, "", "get", "csr", other); !regexpLine(out, other+`\s+\S+\s+kubernetes.io/kube-apiserver-client-kubelet\s+system:node:joiner\s+<none>\s+Pending`) {
		t.Errorf("a node's request for another node's certificate should stay Pending:\n%s", out)
	}
}

// kubectl get/approve/deny on CertificateSigningRequests, and the validation of bad ones.
// csrManifest is a CertificateSigningRequest of a new key for cn in orgs, extra lines
// appended to its spec.
func csrManifest(t *testing.T, name, cn string, orgs []string, signer string, extra string) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	req, err := certutil.MakeCSR(key, &pkix.Name{CommonName: cn, Organization: orgs}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: %s
spec:
  request: %s
  signerName: %s
  usages: [digital signature, client auth]
%s`, name, base64.StdEncoding.EncodeToString(req), signer, extra)
}

func TestKubectlCertificateApproveDeny(t *testing.T) {
	c := startCluster(t)
	csrManifest := func(name, cn string, orgs []string, signer string, extra string) string {
		return csrManifest(t, name, cn, orgs, signer, extra)
	}
	c.mustKubectl(t, csrManifest("jane", "jane", []string{"devs"}, certificatesv1.KubeAPIServerClientSignerName, "  expirationSeconds: 3600\n"), "apply", "-f", "-")
	c.mustKubectl(t, csrManifest("mallory", "mallory", nil, certificatesv1.KubeAPIServerClientSignerName, ""), "apply", "-f", "-")
	// Server-side apply creates with the requester recorded too, whatever the body claims.
	c.mustKubectl(t, csrManifest("ssa", "ssa", nil, certificatesv1.KubeAPIServerClientSignerName, "  username: someone-else\n"), "apply", "--server-side", "-f", "-")
	if got := c.mustKubectl(t, "", "get", "csr", "ssa", "-o", "jsonpath={.spec.username}"); got != "admin" {
		t.Errorf("server-side applied CSR's username = %q, want the requester admin", got)
	}
	out := c.mustKubectl(t, "", "get", "csr")
	if !regexpLine(out, `NAME\s+AGE\s+SIGNERNAME\s+REQUESTOR\s+REQUESTEDDURATION\s+CONDITION`) ||
		!regexpLine(out, `jane\s+\S+\s+kubernetes.io/kube-apiserver-client\s+admin\s+60m\s+Pending`) {
		t.Errorf("kubectl get csr:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "certificate", "approve", "jane"); !strings.Contains(out, "certificatesigningrequest.certificates.k8s.io/jane approved") {
		t.Errorf("approve: %s", out)
	}
	if out := c.mustKubectl(t, "", "certificate", "deny", "mallory"); !strings.Contains(out, "certificatesigningrequest.certificates.k8s.io/mallory denied") {
		t.Errorf("deny: %s", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out = c.mustKubectl(t, "", "get", "csr")
		if regexpLine(out, `jane\s.*Approved,Issued`) && regexpLine(out, `mallory\s.*Denied\s*$`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !regexpLine(out, `jane\s.*Approved,Issued`) || !regexpLine(out, `mallory\s.*Denied\s*$`) {
		t.Fatalf("after approve and deny:\n%s", out)
	}
	issued := c.mustKubectl(t, "", "get", "csr", "jane", "-o", "jsonpath={.status.certificate}")
	if pemCert, err := base64.StdEncoding.DecodeString(issued); err != nil || !strings.Contains(string(pemCert), "BEGIN CERTIFICATE") {
		t.Errorf("issued certificate %q: %v", issued, err)
	} else {
		block, _ := pem.Decode(pemCert)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil || cert.Subject.CommonName != "jane" || time.Until(cert.NotAfter) > time.Hour {
			t.Errorf("certificate %v %v, want CN jane for the requested hour", cert.Subject, err)
		}
	}
	// Approving a denied request, removing the approval, or changing the spec: refused.
	// (kubectl refuses that itself; the server must too.)
	mallory, err := c.client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "mallory", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mallory.Status.Conditions = append(mallory.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: "True"})
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), "mallory", mallory, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "Approved and Denied conditions are mutually exclusive") {
		t.Errorf("approval of a denied CSR: %v", err)
	}
	mallory.Status.Conditions = nil
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), "mallory", mallory, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), `updates may not remove a condition of type "Denied"`) {
		t.Errorf("removal of a Denied condition: %v", err)
	}
	if out, err := c.kubectl(t, "", "patch", "csr", "jane", "--subresource", "status", "--type", "json",
		"-p", `[{"op":"replace","path":"/status/certificate","value":"Zm9v"}]`); err == nil || !strings.Contains(out, "updates may not modify existing certificate content") {
		t.Errorf("status patch replacing the certificate: %v\n%s", err, out)
	}

	for _, tc := range []struct{ manifest, want string }{
		{csrManifest("short", "short", nil, certificatesv1.KubeAPIServerClientSignerName, "  expirationSeconds: 60\n"),
			"spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)"},
		{csrManifest("nosigner", "x", nil, "nodomain", ""), "spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'"},
		{csrManifest("root", "root", []string{"system:masters"}, certificatesv1.KubeAPIServerClientSignerName, ""),
			`certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`},
		{`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: garbage}
spec: {request: Zm9v, signerName: example.com/x, usages: [client auth, client auth]}
`, "PEM block type must be CERTIFICATE REQUEST"},
	} {
		if out, err := c.kubectl(t, tc.manifest, "create", "-f", "-"); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("want refusal %q, got %v:\n%s", tc.want, err, out)
		}
	}
}

// TestCSRAdmission: kube-apiserver's CertificateApproval and CertificateSigning admission
// with the real kubectl, as a user whom RBAC lets update the approval and status
// subresources: approving needs `approve` on the signer (or its domain/*), issuing a
// certificate needs `sign` on it.
func TestCSRAdmission(t *testing.T) {
	c := startCluster(t)
	const widgets = "example.com/widgets" // a signer no controller of miniapi handles
	c.mustKubectl(t, csrManifest(t, "alpha", "alpha", nil, widgets, ""), "create", "-f", "-")
	c.mustKubectl(t, csrManifest(t, "beta", "beta", nil, certificatesv1.KubeAPIServerClientSignerName, ""), "create", "-f", "-")
	c.mustKubectl(t, "", "create", "clusterrole", "csr-handler", "--verb=get,list,watch", "--resource=certificatesigningrequests")
	c.mustKubectl(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-subresources}
rules:
- apiGroups: [certificates.k8s.io]
  resources: [certificatesigningrequests/approval, certificatesigningrequests/status]
  verbs: [get, update, patch]
`, "apply", "-f", "-")
	c.mustKubectl(t, "", "create", "clusterrolebinding", "cora-csr", "--clusterrole=csr-handler", "--user=cora")
	c.mustKubectl(t, "", "create", "clusterrolebinding", "cora-csr-subresources", "--clusterrole=csr-subresources", "--user=cora")

	refused := func(want string, args ...string) {
		t.Helper()
		out, err := c.kubectl(t, "", append([]string{"--as=cora"}, args...)...)
		if err == nil || !strings.Contains(out, "Error from server (Forbidden): "+want) {
			t.Errorf("kubectl --as=cora %s: %v\n%s\nwant Forbidden: %s", strings.Join(args, " "), err, out, want)
		}
	}
	refused(`certificatesigningrequests.certificates.k8s.io "alpha" is forbidden: user not permitted to approve requests with signerName "example.com/widgets"`,
		"certificate", "approve", "alpha")
	refused(`certificatesigningrequests.certificates.k8s.io "alpha" is forbidden: user not permitted to approve requests with signerName "example.com/widgets"`,
		"certificate", "deny", "alpha")

	// approve on every signer of example.com, as kube-apiserver's domain/* wildcard.
	signerRole := func(name, verb, signer string) string {
		return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %s}
rules:
- {apiGroups: [certificates.k8s.io], resources: [signers], resourceNames: [%q], verbs: [%s]}
`, name, signer, verb)
	}
	c.mustKubectl(t, signerRole("widget-approver", "approve", "example.com/*"), "apply", "-f", "-")
	c.mustKubectl(t, "", "create", "clusterrolebinding", "cora-widget-approver", "--clusterrole=widget-approver", "--user=cora")
	// (RBAC's caches follow the new binding within moments.)
	if out := eventually(t, c, "--as=cora", "certificate", "approve", "alpha"); !strings.Contains(out, "certificatesigningrequest.certificates.k8s.io/alpha approved") {
		t.Errorf("approve with approve on example.com/*: %s", out)
	}
	refused(`certificatesigningrequests.certificates.k8s.io "beta" is forbidden: user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"`,
		"certificate", "approve", "beta")

	certPEM, _, err := certutil.GenerateSelfSignedCertKey("alpha", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sign := fmt.Sprintf(`{"status":{"certificate":%q}}`, base64.StdEncoding.EncodeToString(certPEM))
	// Conditions alone (a signer's Failed) need no sign permission.
	c.mustKubectl(t, "", "--as=cora", "patch", "csr", "alpha", "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[{"type":"Approved","status":"True","reason":"x"},{"type":"Progressing","status":"True"}]}}`)
	refused(`certificatesigningrequests.certificates.k8s.io "alpha" is forbidden: user not permitted to sign requests with signerName "example.com/widgets"`,
		"patch", "csr", "alpha", "--subresource=status", "--type=merge", "-p", sign)
	c.mustKubectl(t, signerRole("widget-signer", "sign", widgets), "apply", "-f", "-")
	c.mustKubectl(t, "", "create", "clusterrolebinding", "cora-widget-signer", "--clusterrole=widget-signer", "--user=cora")
	eventually(t, c, "--as=cora", "patch", "csr", "alpha", "--subresource=status", "--type=merge", "-p", sign)
	if out := c.mustKubectl(t, "", "get", "csr", "alpha"); !regexpLine(out, `alpha\s.*Approved,Issued`) {
		t.Errorf("after cora signed:\n%s", out)
	}
	// The admin (system:masters) approves anything, and the controllers still issue.
	c.mustKubectl(t, "", "certificate", "approve", "beta")
	waitFor(t, "beta issued by csrsigning", func() bool {
		return regexpLine(c.mustKubectl(t, "", "get", "csr", "beta"), `beta\s.*Approved,Issued`)
	})
}

// TestTokenCleaner: miniapi's tokencleaner deletes bootstrap tokens once expired (made
// with docs/security.md's kubectl recipe), when they fall due, and nothing else.
func TestTokenCleaner(t *testing.T) {
	c := startCluster(t)
	rfc := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	createBootstrapToken(t, c, "expird", "0123456789abcdef", rfc(-time.Minute))
	createBootstrapToken(t, c, "soonxx", "0123456789abcdef", rfc(10*time.Second))
	createBootstrapToken(t, c, "laterx", "0123456789abcdef", rfc(time.Hour))
	// An ordinary Secret with an expiration key is no bootstrap token.
	c.mustKubectl(t, "", "-n", "kube-system", "create", "secret", "generic", "bootstrap-token-opaque", "--from-literal", "expiration="+rfc(-time.Hour))
	present := func(name string) bool {
		out, err := c.kubectl(t, "", "-n", "kube-system", "get", "secret", name, "-o", "name")
		if err != nil && !strings.Contains(out, "NotFound") {
			t.Fatalf("get secret %s: %v %s", name, err, out)
		}
		return err == nil
	}
	waitFor(t, "the expired token deleted", func() bool { return !present("bootstrap-token-expird") })
	if !present("bootstrap-token-soonxx") {
		t.Errorf("a token expiring in seconds was deleted before it expired")
	}
	waitFor(t, "the token that just expired deleted", func() bool { return !present("bootstrap-token-soonxx") })
	if !present("bootstrap-token-laterx") || !present("bootstrap-token-opaque") {
		t.Errorf("an unexpired token or an ordinary Secret was deleted")
	}
}
