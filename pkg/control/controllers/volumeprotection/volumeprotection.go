// Package volumeprotection is kube-controller-manager's pvc-protection and pv-protection
// controllers: a PersistentVolumeClaim being deleted keeps its kubernetes.io/pvc-protection
// finalizer while a pod scheduled to a node names it, finished or not, as long as the pod
// exists (checked against the API, not only the cache, before letting go), and a
// PersistentVolume keeps kubernetes.io/pv-protection while it is Bound. The finalizers come
// from the StorageObjectInUseProtection admission plugin
// (pkg/control/admission/storageprotection); a claim or volume not being deleted that lacks
// its finalizer gets it back from these controllers, as kube's.
package volumeprotection

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	"github.com/minik8s/minik8s/pkg/control/admission/storageprotection"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/storage/ephemeral"
)

// Names of the controllers, as kube-controller-manager's --controllers knows them.
const (
	PVCName = "pvc-protection"
	PVName  = "pv-protection"
)

// Claims removes the claims' finalizer once no pod uses the claim, and adds it back to a
// claim not being deleted.
type Claims struct {
	client kubernetes.Interface
	pvcs   corelisters.PersistentVolumeClaimLister
	pods   corelisters.PodLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger
}

// NewClaims wires the pvc-protection controller to the shared informers.
func NewClaims(client kubernetes.Interface, pvcs coreinformers.PersistentVolumeClaimInformer, pods coreinformers.PodInformer, log *slog.Logger) (*Claims, error) {
	c := &Claims{client: client, pvcs: pvcs.Lister(), pods: pods.Lister(), log: log,
		synced: []cache.InformerSynced{pvcs.Informer().HasSynced, pods.Informer().HasSynced},
		queue:  workloop.NewQueue[string](PVCName)}
	enqueue := func(obj any) {
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && (pvc.DeletionTimestamp != nil || !slices.Contains(pvc.Finalizers, storageprotection.PVCFinalizer)) {
			c.queue.Add(pvc.Namespace + "/" + pvc.Name)
		}
	}
	if _, err := pvcs.Informer().AddEventHandler(workloop.OnAddOrUpdate(enqueue)); err != nil {
		return nil, err
	}
	// A pod that goes may free its claims.
	podChanged := func(obj any) {
		if pod, ok := workloop.Object[*corev1.Pod](obj); ok {
			for _, name := range claimNames(pod) {
				c.queue.Add(pod.Namespace + "/" + name)
			}
		}
	}
	_, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) { podChanged(obj) }, DeleteFunc: podChanged})
	return c, err
}

// Run works the queue until ctx ends.
func (c *Claims) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Claims) sync(ctx context.Context, key string) (time.Duration, error) {
	pvc, found, err := workloop.Lookup(key, c.pvcs.PersistentVolumeClaims)
	if !found {
		return 0, err
	}
	if pvc.DeletionTimestamp == nil {
		return 0, c.addClaimFinalizer(ctx, pvc)
	}
	if !slices.Contains(pvc.Finalizers, storageprotection.PVCFinalizer) {
		return 0, nil
	}
	cached, err := c.pods.Pods(pvc.Namespace).List(labels.Everything())
	if err != nil {
		return 0, err
	}
	if inUse(cached, pvc) {
		return 0, nil // the pod's deletion brings the claim back
	}
	// The cache may lag a pod just created: ask the API before letting the claim go.
	live, err := c.client.CoreV1().Pods(pvc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	pods := make([]*corev1.Pod, len(live.Items))
	for i := range live.Items {
		pods[i] = &live.Items[i]
	}
	if inUse(pods, pvc) {
		return 0, nil
	}
	pvc = pvc.DeepCopy()
	pvc.Finalizers = slices.DeleteFunc(pvc.Finalizers, func(f string) bool { return f == storageprotection.PVCFinalizer })
	_, err = c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}

// addClaimFinalizer puts the finalizer back on a claim not being deleted that lacks it (one
// made before the admission plugin, or whose finalizer was edited away), as kube's
// pvc-protection addFinalizer.
func (c *Claims) addClaimFinalizer(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if slices.Contains(pvc.Finalizers, storageprotection.PVCFinalizer) {
		return nil
	}
	pvc = pvc.DeepCopy()
	pvc.Finalizers = append(pvc.Finalizers, storageprotection.PVCFinalizer)
	_, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// inUse tells whether one of pods keeps pvc from being deleted.
func inUse(pods []*corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	return slices.ContainsFunc(pods, func(pod *corev1.Pod) bool { return usesClaim(pod, pvc) })
}

// usesClaim mirrors kube's podUsesPVCForDeletion: only a pod scheduled to a node counts
// (the kubelet never starts a pod whose claim is being deleted, so an unscheduled one
// does not hold the claim), and it counts while it exists, finished or not. A generic
// ephemeral volume's claim counts only if it is that pod's (the pod controls it) and the
// pod is not shut down (deleted with no grace period), which breaks a pod finalizer
// waiting on the claim.
func usesClaim(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	if pod.Spec.NodeName == "" || pod.Namespace != pvc.Namespace {
		return false
	}
	shutDown := pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
	for i, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name:
			return true
		case v.Ephemeral != nil && !shutDown && ephemeral.VolumeClaimName(pod, &pod.Spec.Volumes[i]) == pvc.Name &&
			ephemeral.VolumeIsForPod(pod, pvc) == nil:
			return true
		}
	}
	return false
}

// claimNames are the claims a pod's volumes use, a generic ephemeral volume's included.
func claimNames(pod *corev1.Pod) []string {
	var out []string
	for i, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, ephemeral.VolumeClaimName(pod, &pod.Spec.Volumes[i]))
		}
	}
	return out
}

// Volumes removes the volumes' finalizer once a volume being deleted is not Bound, and
// adds it back to a volume not being deleted.
type Volumes struct {
	client kubernetes.Interface
	pvs    corelisters.PersistentVolumeLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger
}

// NewVolumes wires the pv-protection controller to the shared volume informer.
func NewVolumes(client kubernetes.Interface, pvs coreinformers.PersistentVolumeInformer, log *slog.Logger) (*Volumes, error) {
	c := &Volumes{client: client, pvs: pvs.Lister(), log: log, synced: []cache.InformerSynced{pvs.Informer().HasSynced},
		queue: workloop.NewQueue[string](PVName)}
	enqueue := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && (pv.DeletionTimestamp != nil || !slices.Contains(pv.Finalizers, storageprotection.PVFinalizer)) {
			c.queue.Add(pv.Name)
		}
	}
	_, err := pvs.Informer().AddEventHandler(workloop.OnAddOrUpdate(enqueue))
	return c, err
}

// Run works the queue until ctx ends.
func (c *Volumes) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Volumes) sync(ctx context.Context, name string) (time.Duration, error) {
	pv, found, err := workloop.Found(c.pvs.Get(name))
	if !found {
		return 0, err
	}
	has := slices.Contains(pv.Finalizers, storageprotection.PVFinalizer)
	pv = pv.DeepCopy()
	switch {
	case pv.DeletionTimestamp == nil && !has:
		// As kube's pv-protection addFinalizer: a volume made before the admission plugin,
		// or whose finalizer was edited away, gets it back.
		pv.Finalizers = append(pv.Finalizers, storageprotection.PVFinalizer)
	case pv.DeletionTimestamp != nil && has && pv.Status.Phase != corev1.VolumeBound:
		pv.Finalizers = slices.DeleteFunc(pv.Finalizers, func(f string) bool { return f == storageprotection.PVFinalizer })
	default:
		return 0, nil
	}
	_, err = c.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}
