// Package csrapproving approves kubelet client certificate requests, as
// kube-controller-manager's csrapproving controller does: a request for
// kubernetes.io/kube-apiserver-client-kubelet that is a well-formed node client
// certificate is approved if a SubjectAccessReview says its requester may create
// certificatesigningrequests/selfnodeclient (a node renewing its own certificate) or
// certificatesigningrequests/nodeclient (a bootstrap token joining a new node).
package csrapproving

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"time"

	"github.com/minik8s/minik8s/internal/controller/csrqueue"
	"github.com/minik8s/minik8s/pkg/control/registry/certificates"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
)

// Name is the controller's name.
const Name = "csrapproving"

// recognizer is one kind of request the controller approves and the permission its
// requester needs.
type recognizer struct {
	recognize   func(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool
	subresource string
	message     string
}

var recognizers = []recognizer{
	{recognize: isSelfNodeClientCert, subresource: "selfnodeclient",
		message: "Auto approving self kubelet client certificate after SubjectAccessReview."},
	{recognize: isNodeClientCert, subresource: "nodeclient",
		message: "Auto approving kubelet client certificate after SubjectAccessReview."},
}

// Controller approves node client CSRs.
type Controller struct{ *csrqueue.Base }

// New wires the controller to the shared CSR informer.
func New(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, log *slog.Logger) (*Controller, error) {
	b, err := csrqueue.New(Name, client, csrs, pending, log)
	return &Controller{b}, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.Work(ctx, c.sync)
}

// pending: neither approved nor denied, no certificate yet.
func pending(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 {
		return false
	}
	for _, cond := range csr.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved || cond.Type == certificatesv1.CertificateDenied {
			return false
		}
	}
	return true
}

func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	csr, err := c.Wanted(name)
	if csr == nil {
		return 0, err
	}
	req, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		c.Log.Info("unable to parse csr", "csr", name, "err", err)
		return 0, nil // validation let it in; nothing a retry would change
	}
	var tried []string
	for _, r := range recognizers {
		if !r.recognize(csr, req) {
			continue
		}
		tried = append(tried, r.subresource)
		allowed, err := c.authorize(ctx, csr, r.subresource)
		if err != nil {
			return 0, err
		}
		if !allowed {
			continue
		}
		csr = csr.DeepCopy()
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: r.message,
		})
		if _, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("error updating approval for csr: %w", err)
		}
		c.Log.Info("approved", "csr", name, "requester", csr.Spec.Username, "as", r.subresource)
		return 0, nil
	}
	if len(tried) > 0 {
		// Left for a person to approve or deny, as upstream's ignorable error does.
		c.Log.Debug("recognized csr but subject access review was not approved", "csr", name, "as", tried)
	}
	return 0, nil
}

// authorize asks the API server whether the requester may create the CSR subresource.
func (c *Controller) authorize(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, subresource string) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: certificatesv1.GroupName,
			Resource: "certificatesigningrequests", Verb: "create", Subresource: subresource},
	}}
	sar, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

func isNodeClientCert(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName &&
		certificates.ValidateKubeletClientCSR(req, csr.Spec.Usages) == nil
}

// isSelfNodeClientCert: a node's request for its own name.
func isSelfNodeClientCert(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.Username == req.Subject.CommonName && isNodeClientCert(csr, req)
}
