// Package volumes is what the two PersistentVolume controllers, pvbinder and localpath,
// share: the listers they read and their two queues, one of claims and one of volumes.
package volumes

import (
	"context"
	"log/slog"
	"sync"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// Base is a volume controller's client, listers, queues, recorder and log.
type Base struct {
	Client   kubernetes.Interface
	PVs      corelisters.PersistentVolumeLister
	PVCs     corelisters.PersistentVolumeClaimLister
	Nodes    corelisters.NodeLister
	Classes  storagelisters.StorageClassLister
	Synced   []cache.InformerSynced
	Claims   workqueue.TypedRateLimitingInterface[string] // namespace/name of claims
	Volumes  workqueue.TypedRateLimitingInterface[string] // names of volumes
	Recorder record.EventRecorder
	Log      *slog.Logger
}

// New wires a Base to the shared informers: claims added or updated go to Claims, volumes
// added or updated to Volumes (deletions are the controller's to hear, if it cares). The
// queues are named queuePrefix+"claims" and queuePrefix+"volumes" in the workqueue metrics.
func New(queuePrefix string, client kubernetes.Interface, pvs coreinformers.PersistentVolumeInformer, pvcs coreinformers.PersistentVolumeClaimInformer,
	nodes coreinformers.NodeInformer, classes storageinformers.StorageClassInformer, recorder record.EventRecorder, log *slog.Logger) (*Base, error) {
	b := &Base{
		Client: client, PVs: pvs.Lister(), PVCs: pvcs.Lister(), Nodes: nodes.Lister(), Classes: classes.Lister(),
		Synced:   []cache.InformerSynced{pvs.Informer().HasSynced, pvcs.Informer().HasSynced, nodes.Informer().HasSynced, classes.Informer().HasSynced},
		Claims:   workloop.NewQueue[string](queuePrefix + "claims"),
		Volumes:  workloop.NewQueue[string](queuePrefix + "volumes"),
		Recorder: recorder, Log: log,
	}
	if _, err := pvcs.Informer().AddEventHandler(workloop.OnAddOrUpdate(workloop.Enqueue(b.Claims))); err != nil {
		return nil, err
	}
	_, err := pvs.Informer().AddEventHandler(workloop.OnAddOrUpdate(workloop.Enqueue(b.Volumes)))
	return b, err
}

// Work works both queues, one worker each, until ctx ends.
func (b *Base) Work(ctx context.Context, syncClaim, syncVolume workloop.SyncFunc[string]) {
	var volumes sync.WaitGroup
	defer volumes.Wait()
	volumes.Go(func() { workloop.RunWorkers(ctx, 1, b.Volumes, b.Log, syncVolume, b.Synced...) })
	workloop.RunWorkers(ctx, 1, b.Claims, b.Log, syncClaim, b.Synced...)
}
