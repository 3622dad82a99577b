// Package certificates holds kube-apiserver's three admission plugins for
// CertificateSigningRequests, on by default there: CertificateApproval (approving or
// denying needs the verb `approve` on the request's signer), CertificateSigning (setting
// status.certificate needs `sign` on it) and CertificateSubjectRestriction (no
// kubernetes.io/kube-apiserver-client request for the group system:masters). A signer is
// the synthetic resource `signers` of certificates.k8s.io named by the signerName;
// permission on `<domain>/*` covers every signer of that domain.
package certificates

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/registry/certificates"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// isCSR says whether a is a write of certificatesigningrequests with the subresource sub.
func isCSR(a *generic.Attributes, sub string) bool {
	return a.Resource.Group == certificatesv1.GroupName && a.Resource.Resource == "certificatesigningrequests" && a.Subresource == sub
}

// storedCSR is the stored request that a, an update of its subresource sub, changes; nil,
// with no error, when a is another request.
func storedCSR(a *generic.Attributes, sub string) (*certificatesv1.CertificateSigningRequest, error) {
	if a.Operation != generic.Update || !isCSR(a, sub) {
		return nil, nil
	}
	old, ok := a.OldObject.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil, admission.Forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.OldObject))
	}
	return old, nil
}

// Approval is the CertificateApproval plugin: an update of certificatesigningrequests/
// approval needs `approve` on the signer of the stored request (the stored one: the
// approval subresource cannot change the signerName, and must not be a way to pick one).
type Approval struct{ Authorizer authorizer.Authorizer }

// Validate checks approvals.
func (p Approval) Validate(ctx context.Context, a *generic.Attributes) error {
	old, err := storedCSR(a, "approval")
	if old == nil {
		return err
	}
	if !authorizedForSigner(ctx, p.Authorizer, "approve", old.Spec.SignerName) {
		return admission.Forbidden(a, fmt.Errorf("user not permitted to approve requests with signerName %q", old.Spec.SignerName))
	}
	return nil
}

// Signing is the CertificateSigning plugin: an update of certificatesigningrequests/status
// that changes status.certificate needs `sign` on the stored request's signer. Status
// updates that only add conditions (a signer's Failed) need nothing more than RBAC's.
type Signing struct{ Authorizer authorizer.Authorizer }

// Validate checks certificates being issued.
func (p Signing) Validate(ctx context.Context, a *generic.Attributes) error {
	old, err := storedCSR(a, "status")
	if old == nil {
		return err
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.Forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.Object))
	}
	if bytes.Equal(old.Status.Certificate, csr.Status.Certificate) {
		return nil
	}
	if !authorizedForSigner(ctx, p.Authorizer, "sign", old.Spec.SignerName) {
		return admission.Forbidden(a, fmt.Errorf("user not permitted to sign requests with signerName %q", old.Spec.SignerName))
	}
	return nil
}

// SubjectRestriction is the CertificateSubjectRestriction plugin: a created request for
// the kube-apiserver-client signer may not name the group system:masters, which no
// authorizer can restrict (approving one by mistake would mint a cluster-admin).
type SubjectRestriction struct{}

// Validate checks creates.
func (SubjectRestriction) Validate(_ context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create || !isCSR(a, "") {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.Forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.Object))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	req, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return admission.Forbidden(a, fmt.Errorf("failed to parse CSR: %v", err))
	}
	for _, g := range req.Subject.Organization {
		if g == user.SystemPrivilegedGroup {
			return admission.Forbidden(a, fmt.Errorf("use of %s signer with %s group is not allowed", certificatesv1.KubeAPIServerClientSignerName, user.SystemPrivilegedGroup))
		}
	}
	return nil
}

// authorizedForSigner asks az whether the requesting user may verb the signer named, or
// failing that every signer of its domain (`kubernetes.io/*`), as kube-apiserver does.
func authorizedForSigner(ctx context.Context, az authorizer.Authorizer, verb, signerName string) bool {
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return false
	}
	domain, _, _ := strings.Cut(signerName, "/")
	for _, name := range []string{signerName, domain + "/*"} {
		d, reason, err := az.Authorize(ctx, authorizer.AttributesRecord{User: u.Info(), Verb: verb, Name: name,
			APIGroup: certificatesv1.GroupName, APIVersion: "*", Resource: "signers", ResourceRequest: true})
		if err != nil {
			slog.Debug("cannot authorize signer", "verb", verb, "signer", name, "reason", reason, "err", err)
		}
		if d == authorizer.DecisionAllow {
			return true
		}
	}
	return false
}
