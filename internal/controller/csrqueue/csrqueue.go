// Package csrqueue is what the two CSR controllers, csrapproving and csrsigning, share, as
// kube-controller-manager's certificates.CertificateController: a queue of the names of
// the CertificateSigningRequests that still want the controller's work, fed by the shared
// informer, and the workers that work it.
package csrqueue

import (
	"time"

	"context"
	"log/slog"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// workers is how many CSRs a controller works on at once.
const workers = 2

// Base is a CSR controller's client, lister, queue and log.
type Base struct {
	Client kubernetes.Interface
	CSRs   certlisters.CertificateSigningRequestLister
	Log    *slog.Logger
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	wants  func(csr *certificatesv1.CertificateSigningRequest) bool
}

// New wires a Base named name (in the workqueue metrics) to the shared CSR informer: a CSR
// added or updated is queued while wants says it needs the controller.
func New(name string, client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer,
	wants func(csr *certificatesv1.CertificateSigningRequest) bool, log *slog.Logger) (*Base, error) {
	b := &Base{Client: client, CSRs: csrs.Lister(), Log: log, synced: csrs.Informer().HasSynced,
		queue: workloop.NewBackoffQueue[string](name, 200*time.Millisecond, 1000*time.Second, nil), wants: wants}
	_, err := csrs.Informer().AddEventHandler(workloop.OnAddOrUpdate(func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && wants(csr) {
			b.queue.Add(csr.Name)
		}
	}))
	return b, err
}

// Work hands the queued names to sync until ctx ends.
func (b *Base) Work(ctx context.Context, sync workloop.SyncFunc[string]) {
	workloop.RunWorkers(ctx, workers, b.queue, b.Log, sync, b.synced)
}

// Wanted is the CSR named name while it still wants the controller; nil, with no error,
// when it is gone or no longer does.
func (b *Base) Wanted(name string) (*certificatesv1.CertificateSigningRequest, error) {
	csr, err := b.CSRs.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !b.wants(csr)) {
		return nil, nil
	}
	return csr, err
}
