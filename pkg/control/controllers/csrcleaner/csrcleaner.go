// Package csrcleaner deletes CertificateSigningRequests that have served their purpose,
// as kube-controller-manager's csrcleaner does every hour: issued, denied or failed ones
// after an hour, pending ones and approved ones still without a certificate after a day,
// and any whose certificate has expired.
package csrcleaner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
)

// Name is the controller's name.
const Name = "csrcleaner"

const (
	pollingInterval   = time.Hour
	decidedExpiration = time.Hour      // issued, denied or failed
	pendingExpiration = 24 * time.Hour // neither, or approved and not issued yet
)

// Controller deletes old CSRs.
type Controller struct {
	client kubernetes.Interface
	csrs   certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	now    func() time.Time
	log    *slog.Logger
}

// New wires the cleaner to the shared CSR informer.
func New(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, log *slog.Logger) *Controller {
	return &Controller{client: client, csrs: csrs.Lister(), synced: csrs.Informer().HasSynced, now: time.Now, log: log}
}

// Run cleans every hour until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	wait.UntilWithContext(ctx, c.clean, pollingInterval)
}

func (c *Controller) clean(ctx context.Context) {
	all, err := c.csrs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, csr := range all {
		if why := c.expired(csr); why != "" {
			err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				c.log.Info("unable to delete csr", "csr", csr.Name, "err", err)
				continue
			}
			c.log.Info("deleted csr", "csr", csr.Name, "why", why)
		}
	}
}

// expired says why a CSR is due for deletion, or "".
func (c *Controller) expired(csr *certificatesv1.CertificateSigningRequest) string {
	now := c.now()
	if cert := firstCertificate(csr.Status.Certificate); cert != nil && now.After(cert.NotAfter) {
		return "certificate expired"
	}
	// Every condition is weighed, as kube's handle: an approved request whose signer then
	// failed goes an hour after the failure.
	decided := false
	for _, cond := range csr.Status.Conditions {
		limit, why := decidedExpiration, string(cond.Type)+" more than an hour ago"
		switch cond.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
		case certificatesv1.CertificateApproved:
			// One its signer has not issued yet waits as long as a pending one, as
			// kube's isApprovedUnissuedPastDeadline.
			if len(csr.Status.Certificate) == 0 {
				limit, why = pendingExpiration, "approved more than a day ago and not issued"
			}
		default:
			continue
		}
		decided = true
		at := cond.LastUpdateTime.Time
		if at.IsZero() {
			at = csr.CreationTimestamp.Time
		}
		if now.Sub(at) > limit {
			return why
		}
	}
	if decided {
		return ""
	}
	if now.Sub(csr.CreationTimestamp.Time) > pendingExpiration {
		return "pending for more than a day"
	}
	return ""
}

func firstCertificate(data []byte) *x509.Certificate {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	return cert
}
