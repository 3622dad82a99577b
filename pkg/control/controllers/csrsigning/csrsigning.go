// Package csrsigning signs approved CertificateSigningRequests with the cluster CA, as
// kube-controller-manager's csrsigning controller does for the signers
// kubernetes.io/kube-apiserver-client-kubelet, kubernetes.io/kube-apiserver-client and
// kubernetes.io/kubelet-serving: a request that does not fit its signer gets a Failed
// condition; others' signers are left alone.
package csrsigning

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/csrqueue"
	"github.com/minik8s/minik8s/pkg/control/registry/certificates"
	"github.com/minik8s/minik8s/pkg/pki"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
)

// Name is the controller's name.
const Name = "csrsigning"

// DefaultDuration is --cluster-signing-duration's default, as kube-controller-manager's.
const DefaultDuration = 365 * 24 * time.Hour

// Kubernetes backdates certificates 5 minutes for clocks a little behind; certificates
// shorter than 8 hours do not have their end backdated too.
const (
	backdate = 5 * time.Minute
	short    = 8 * time.Hour
	// minRequested is the least spec.expirationSeconds honoured (twice the backdating).
	minRequested = 10 * time.Minute
)

// Controller signs approved CSRs.
type Controller struct {
	*csrqueue.Base
	ca       *pki.CA
	duration time.Duration
	now      func() time.Time
}

// New wires the controller to the shared CSR informer; duration is
// --cluster-signing-duration, the longest certificate it issues.
func New(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, ca *pki.CA, duration time.Duration, log *slog.Logger) (*Controller, error) {
	if duration <= 0 {
		return nil, fmt.Errorf("--cluster-signing-duration %v must be positive", duration)
	}
	b, err := csrqueue.New(Name, client, csrs, toSign, log)
	return &Controller{Base: b, ca: ca, duration: duration, now: time.Now}, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.Work(ctx, c.sync)
}

// toSign: approved, not failed, no certificate yet.
func toSign(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 {
		return false
	}
	approved := false
	for _, cond := range csr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		case certificatesv1.CertificateApproved:
			approved = true
		}
	}
	return approved
}

// checks are the signers this controller serves and what each accepts.
var checks = map[string]func(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error{
	certificatesv1.KubeAPIServerClientKubeletSignerName: certificates.ValidateKubeletClientCSR,
	certificatesv1.KubeletServingSignerName:             certificates.ValidateKubeletServingCSR,
	certificatesv1.KubeAPIServerClientSignerName:        validAPIServerClientUsages,
}

func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	csr, err := c.Wanted(name)
	if csr == nil {
		return 0, err
	}
	check, ours := checks[csr.Spec.SignerName]
	if !ours {
		return 0, nil
	}
	req, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return 0, fmt.Errorf("unable to parse csr %q: %w", name, err)
	}
	csr = csr.DeepCopy()
	if err := check(req, csr.Spec.Usages); err != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure",
			Message: err.Error(), LastUpdateTime: metav1.Now(),
		})
		if _, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("error adding failure condition for csr: %w", err)
		}
		return 0, nil
	}
	cert, err := c.sign(req, csr.Spec.Usages, csr.Spec.ExpirationSeconds)
	if err != nil {
		return 0, fmt.Errorf("error auto signing csr: %w", err)
	}
	csr.Status.Certificate = cert
	if _, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("error updating signature for csr: %w", err)
	}
	c.Log.Info("signed", "csr", name, "signer", csr.Spec.SignerName, "subject", req.Subject.CommonName)
	return 0, nil
}

func (c *Controller) sign(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, expirationSeconds *int32) ([]byte, error) {
	usage, ext, err := keyUsages(usages)
	if err != nil {
		return nil, err
	}
	notBefore, notAfter := Validity(c.now(), c.ttl(expirationSeconds))
	return c.ca.SignRequest(req, usage, ext, notBefore, notAfter)
}

// ttl is the requested duration within [10 min, --cluster-signing-duration], or the
// signing duration when none is requested.
func (c *Controller) ttl(expirationSeconds *int32) time.Duration {
	if expirationSeconds == nil {
		return c.duration
	}
	switch d := time.Duration(*expirationSeconds) * time.Second; {
	case d > c.duration:
		return c.duration
	case d < minRequested:
		return minRequested
	default:
		return d
	}
}

// Validity is the certificate's window for a ttl issued at now: backdated 5 minutes, the
// end backdated too unless the certificate is short-lived (< 8 h). A ttl of 10 minutes or
// less (a test's --cluster-signing-duration; Kubernetes refuses a ttl under its
// backdating) is backdated a tenth of itself, so the certificate still lives ttl from now.
func Validity(now time.Time, ttl time.Duration) (notBefore, notAfter time.Time) {
	back := backdate
	if ttl <= 2*backdate {
		back = ttl / 10
	}
	notBefore = now.Add(-back)
	if ttl < short {
		return notBefore, now.Add(ttl)
	}
	return notBefore, notBefore.Add(ttl)
}

func validAPIServerClientUsages(_ *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	clientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			clientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !clientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

var keyUsageOf = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsageOf = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// keyUsages maps the API's usages to x509's (each extended usage once, in x509's order).
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var usage x509.KeyUsage
	seen := map[x509.ExtKeyUsage]bool{}
	for _, u := range usages {
		if k, ok := keyUsageOf[u]; ok {
			usage |= k
		} else if e, ok := extKeyUsageOf[u]; ok {
			seen[e] = true
		} else {
			return 0, nil, fmt.Errorf("unrecognized usage values: %q", u)
		}
	}
	var ext []x509.ExtKeyUsage
	for e := x509.ExtKeyUsageAny; e <= x509.ExtKeyUsageMicrosoftKernelCodeSigning; e++ {
		if seen[e] {
			ext = append(ext, e)
		}
	}
	return usage, ext, nil
}
