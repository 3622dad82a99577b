package admission

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
)

// StorageClasses are the StorageClasses the storage plugins read (DefaultStorageClass,
// PersistentVolumeClaimResize), from the admission informers.
type StorageClasses struct {
	storagelisters.StorageClassLister
	inf    *Informers
	synced cache.InformerSynced
}

// NewStorageClasses registers the StorageClass informer in inf.
func NewStorageClasses(inf *Informers) StorageClasses {
	sc := inf.Factory.Storage().V1().StorageClasses()
	return StorageClasses{StorageClassLister: sc.Lister(), inf: inf, synced: sc.Informer().HasSynced}
}

// Wait waits for the informer's first list, as Informers.Wait.
func (s StorageClasses) Wait(ctx context.Context, a *generic.Attributes) (bool, error) {
	return s.inf.Wait(ctx, a, s.synced)
}
