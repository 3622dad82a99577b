// Package certificates holds the rules of certificates.k8s.io/v1
// CertificateSigningRequests (their status and approval subresources) and the checks of
// kubelet CSRs the approving and signing controllers share, as Kubernetes'
// pkg/registry/certificates has them.
package certificates

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// certificates.k8s.io/v1 CertificateSigningRequest, as kube-apiserver's registry has it:
// the requester is recorded from the request, the spec never changes after create, the
// status subresource sets the certificate and other conditions (the signer's), the
// approval subresource only the conditions (Approved, Denied).

var CSRRules = registry.Rules{
	PrepareCreate: func(obj runtime.Object) {
		csr := obj.(*certificatesv1.CertificateSigningRequest)
		// Users cannot create pre-approved or pre-signed requests.
		csr.Status = certificatesv1.CertificateSigningRequestStatus{}
	},
	Requester: func(obj runtime.Object, u user.Info) {
		spec := &obj.(*certificatesv1.CertificateSigningRequest).Spec
		spec.Username, spec.UID, spec.Groups, spec.Extra = u.GetName(), u.GetUID(), u.GetGroups(), nil
		for k, v := range u.GetExtra() {
			if spec.Extra == nil {
				spec.Extra = map[string]certificatesv1.ExtraValue{}
			}
			spec.Extra[k] = v
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		csr := obj.(*certificatesv1.CertificateSigningRequest)
		return validateCSR(csr, csrValidationOptions(csr, nil))
	},
	PrepareUpdate: func(obj, old runtime.Object) {
		csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
		csr.Spec, csr.Status = o.Spec, o.Status
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validateCSRUpdate(obj, old, nil)
	},
	SubresourceUpdates: map[string]registry.SubresourceRules{
		"status": {
			Prepare: func(obj, old runtime.Object) {
				csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
				csr.Spec = o.Spec
				// Approved and Denied are the approval subresource's: the stored ones stay.
				preserveConditions(csr, o, certificatesv1.CertificateApproved)
				preserveConditions(csr, o, certificatesv1.CertificateDenied)
				stampConditions(csr, o)
			},
			Validate: func(obj, old runtime.Object) field.ErrorList {
				return validateCSRUpdate(obj, old, func(o *csrValidation) { o.allowSettingCertificate = true })
			},
		},
		"approval": {
			Prepare: func(obj, old runtime.Object) {
				csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
				conditions := csr.Status.Conditions
				csr.Spec, csr.Status = o.Spec, *o.Status.DeepCopy()
				csr.Status.Conditions = conditions
				stampConditions(csr, o)
			},
			Validate: func(obj, old runtime.Object) field.ErrorList {
				return validateCSRUpdate(obj, old, func(o *csrValidation) { o.allowSettingApprovalConditions = true })
			},
		},
	},
	// As kube's CSR strategies: the resource's writers own neither spec nor status (a CSR
	// created with no labels has no managed fields), the status writer not the conditions,
	// the approver not the certificate.
	ManagedFieldsReset: map[string]fieldpath.Filter{
		"":         fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status"))),
		"status":   fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "conditions"))),
		"approval": fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "certificate"))),
	},
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn, registry.AgeColumn,
			registry.Column("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"], false),
			registry.Column("Requestor", "string", "Name of the user that created the request", false),
			registry.Column("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"], false),
			registry.Column("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"], false),
		},
		Row: func(obj runtime.Object) []any {
			csr := obj.(*certificatesv1.CertificateSigningRequest)
			requested := "<none>"
			if s := csr.Spec.ExpirationSeconds; s != nil {
				requested = duration.HumanDuration(time.Duration(*s) * time.Second)
			}
			return []any{csr.Name, registry.Age(csr.CreationTimestamp), csr.Spec.SignerName, csr.Spec.Username, requested, CSRCondition(csr)}
		},
	},
}

// CSRCondition is the CONDITION column of `kubectl get csr`: Approved, Denied or Pending,
// then ",Failed" and ",Issued".
func CSRCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	status := "Pending"
	if denied {
		status = "Denied"
	} else if approved {
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}

// preserveConditions puts the stored conditions of type t in place of the new ones, at
// the new ones' positions, as kube-apiserver's preserveConditionInstances; where the
// update adds or removes one, it is left for validation to refuse.
func preserveConditions(csr, old *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) {
	stored := findConditions(old, t)
	if len(stored) != len(findConditions(csr, t)) {
		return
	}
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Type == t {
			csr.Status.Conditions[i], stored = stored[0], stored[1:]
		}
	}
}

// stampConditions fills lastUpdateTime and lastTransitionTime as kube-apiserver does:
// now for a new or changed condition, the stored time otherwise.
func stampConditions(csr, old *certificatesv1.CertificateSigningRequest) {
	now := metav1.Now()
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = now
		for _, oc := range old.Status.Conditions {
			if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
				c.LastTransitionTime = oc.LastTransitionTime
				break
			}
		}
	}
}

// ParseCSR decodes a PEM CERTIFICATE REQUEST, as Kubernetes' certificates helper does.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

var allValidUsages = sets.New(
	certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
	certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
	certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
	certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
	certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
	certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
)

// legacyUnknownSigner is certificates.k8s.io/v1beta1's default, refused by v1.
const legacyUnknownSigner = "kubernetes.io/legacy-unknown"

// csrValidation relaxes checks for data stored before a rule existed, and per subresource,
// as kube-apiserver's certificateValidationOptions.
type csrValidation struct {
	allowArbitraryCertificate      bool
	allowDuplicateUsages           bool
	allowUnknownUsages             bool
	allowSettingCertificate        bool
	allowSettingApprovalConditions bool
}

func csrValidationOptions(csr, old *certificatesv1.CertificateSigningRequest) csrValidation {
	var o csrValidation
	if old != nil {
		o.allowArbitraryCertificate = bytes.Equal(csr.Status.Certificate, old.Status.Certificate) ||
			validateCertificate(old.Status.Certificate) != nil
		seen := map[certificatesv1.KeyUsage]bool{}
		for _, u := range old.Spec.Usages {
			o.allowDuplicateUsages = o.allowDuplicateUsages || seen[u]
			o.allowUnknownUsages = o.allowUnknownUsages || !allValidUsages.Has(u)
			seen[u] = true
		}
	}
	return o
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest, opts csrValidation) field.ErrorList {
	errs := registry.ValidateMeta(csr, false, func(string, bool) []string { return nil }) // any name will do
	spec := field.NewPath("spec")
	if req, err := ParseCSR(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	} else if err := req.CheckSignature(); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), "usages must be provided"))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		if !opts.allowUnknownUsages && !allValidUsages.Has(u) {
			errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, sets.List(allValidUsages)))
		}
		if !opts.allowDuplicateUsages && seen[u] {
			errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), u))
		}
		seen[u] = true
	}
	if csr.Spec.SignerName == legacyUnknownSigner {
		errs = append(errs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(spec.Child("signerName"), csr.Spec.SignerName)...)
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateConditions(field.NewPath("status", "conditions"), csr)...)
	if !opts.allowArbitraryCertificate {
		if err := validateCertificate(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

var trueOnlyConditions = sets.New(certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed)

func validateConditions(path *field.Path, csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range csr.Status.Conditions {
		p := path.Index(i)
		if c.Type == "" {
			errs = append(errs, field.Required(p.Child("type"), ""))
		}
		allowed := []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
		if trueOnlyConditions.Has(c.Type) {
			allowed = []corev1.ConditionStatus{corev1.ConditionTrue}
		}
		switch ok := false; {
		case c.Status == "":
			errs = append(errs, field.Required(p.Child("status"), ""))
		default:
			for _, a := range allowed {
				ok = ok || a == c.Status
			}
			if !ok {
				errs = append(errs, field.NotSupported(p.Child("status"), c.Status, allowed))
			}
		}
		if (c.Type == certificatesv1.CertificateApproved && seen[certificatesv1.CertificateDenied]) ||
			(c.Type == certificatesv1.CertificateDenied && seen[certificatesv1.CertificateApproved]) {
			errs = append(errs, field.Invalid(path, c.Type, "Approved and Denied conditions are mutually exclusive")) // kube names the list
		}
		if seen[c.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	return errs
}

func validateCSRUpdate(obj, old runtime.Object, subresource func(*csrValidation)) field.ErrorList {
	csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	opts := csrValidationOptions(csr, o)
	if subresource != nil {
		subresource(&opts)
	}
	errs := validateCSR(csr, opts)
	conditions := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(findConditions(csr, t)) < len(findConditions(o, t)) {
			errs = append(errs, field.Forbidden(conditions, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !opts.allowSettingApprovalConditions {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			now, before := findConditions(csr, t), findConditions(o, t)
			switch {
			case len(now) < len(before): // reported above
			case len(now) > len(before):
				errs = append(errs, field.Forbidden(conditions, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !equality.Semantic.DeepEqual(now, before):
				errs = append(errs, field.Forbidden(conditions, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, o.Status.Certificate) {
		if !opts.allowSettingCertificate {
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
		} else if len(o.Status.Certificate) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
	}
	return errs
}

func findConditions(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

// validateCertificate checks status.certificate: empty, or PEM CERTIFICATE blocks only,
// each a parseable certificate, with nothing but whitespace around them.
func validateCertificate(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return err
		}
		blocks++
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("non-PEM content found after the last CERTIFICATE block")
	}
	return nil
}

// validateSignerName checks the form <domain>/<path>, as Kubernetes' ValidateSignerName.
func validateSignerName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	parts := strings.Split(name, "/")
	if len(parts) != 2 {
		return field.ErrorList{field.Invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	domain, rest := parts[0], parts[1]
	if len(domain) > utilvalidation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(path, domain, utilvalidation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := utilvalidation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(path, domain, fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(path, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, c := range strings.Split(rest, ".") {
		if msgs := utilvalidation.IsDNS1123Subdomain(c); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(path, rest, fmt.Sprintf("validating component %q: %s", c, m)))
			}
			break
		}
	}
	if max := utilvalidation.DNS1123SubdomainMaxLength + utilvalidation.DNS1123LabelMaxLength + 1; len(rest) > max {
		errs = append(errs, field.TooLong(path, rest, max))
	}
	return errs
}

// What the kubelet signers accept, as Kubernetes' certificates helpers check it.
var (
	errOrgNotNodes    = errors.New("subject organization is not system:nodes")
	errCNNotNode      = errors.New("subject common name does not begin with system:node:")
	kubeletClientRSA  = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth)
	kubeletClient     = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	kubeletServingRSA = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth)
	kubeletServing    = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
)

func isNodesOnly(org []string) bool { return len(org) == 1 && org[0] == "system:nodes" }

// ValidateKubeletClientCSR: subject system:node:<name> in O=system:nodes, no SANs, the
// usages of a client certificate.
func ValidateKubeletClientCSR(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	switch {
	case !isNodesOnly(req.Subject.Organization):
		return errOrgNotNodes
	case len(req.DNSNames) > 0:
		return errors.New("DNS subjectAltNames are not allowed")
	case len(req.EmailAddresses) > 0:
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.IPAddresses) > 0:
		return errors.New("IP subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	case !strings.HasPrefix(req.Subject.CommonName, "system:node:"):
		return errCNNotNode
	}
	if u := sets.New(usages...); !u.Equal(kubeletClientRSA) && !u.Equal(kubeletClient) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletClientRSA))
	}
	return nil
}

// ValidateKubeletServingCSR: subject system:node:<name> in O=system:nodes, DNS or IP SANs
// only, the usages of a serving certificate.
func ValidateKubeletServingCSR(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	switch {
	case !isNodesOnly(req.Subject.Organization):
		return errOrgNotNodes
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errors.New("DNS or IP subjectAltName is required")
	case len(req.EmailAddresses) > 0:
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	}
	if u := sets.New(usages...); !u.Equal(kubeletServingRSA) && !u.Equal(kubeletServing) {
		return fmt.Errorf("usages did not match %v", sets.List(kubeletServingRSA))
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCNNotNode
	}
	return nil
}
