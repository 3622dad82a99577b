// Package pvbinder binds PersistentVolumeClaims to PersistentVolumes, as
// kube-controller-manager's persistentvolume-binder does for statically provisioned
// volumes: a Pending claim gets the smallest Available volume that fits (class, access
// modes, size, selector), both sides marked Bound; a volume whose claim is deleted becomes
// Released (Retain) or is deleted (Delete). A claim of a WaitForFirstConsumer class waits
// for the scheduler's node (volume.kubernetes.io/selected-node); a claim of a class with a
// provisioner is marked for it (volume.kubernetes.io/storage-provisioner), which makes the
// volume (pkg/control/controllers/localpath for minik8s.io/local-path) and deletes it.
package pvbinder

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/minik8s/minik8s/internal/controller/volumes"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	"github.com/minik8s/minik8s/pkg/control/admission/defaultstorageclass"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Name is the controller's name in Events.
const Name = "persistentvolume-controller"

// Annotations Kubernetes' binder writes.
const (
	annBindCompleted     = "pv.kubernetes.io/bind-completed"
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
)

// resync looks at every claim and volume again now and then, as the binder's periodic
// sync does, for what no event announced (a volume freed while a claim waited).
const resync = 15 * time.Second

// Controller binds claims and reclaims volumes.
type Controller struct{ *volumes.Base }

// New wires the controller to the shared volume and claim informers.
func New(client kubernetes.Interface, pvs coreinformers.PersistentVolumeInformer, pvcs coreinformers.PersistentVolumeClaimInformer,
	nodes coreinformers.NodeInformer, classes storageinformers.StorageClassInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	b, err := volumes.New("", client, pvs, pvcs, nodes, classes, recorder, log)
	if err != nil {
		return nil, err
	}
	c := &Controller{b}
	// Beside what Base hears, a claim deleted frees the volume it was bound to.
	_, err = pvcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.claimDeleted})
	return c, err
}

// claimDeleted wakes the volume the claim was bound to.
func (c *Controller) claimDeleted(obj any) {
	if pvc, ok := workloop.Object[*corev1.PersistentVolumeClaim](obj); ok && pvc.Spec.VolumeName != "" {
		c.Volumes.Add(pvc.Spec.VolumeName)
	}
}

// Run works the queues until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.Work(ctx, c.syncClaim, c.syncVolume)
}

func (c *Controller) syncClaim(ctx context.Context, key string) (time.Duration, error) {
	pvc, found, err := workloop.Lookup(key, c.PVCs.PersistentVolumeClaims)
	if !found || pvc.DeletionTimestamp != nil {
		return 0, err
	}
	if pvc.Spec.VolumeName != "" {
		return c.syncBoundClaim(ctx, pvc)
	}
	pvs, err := c.PVs.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	if !storagehelpers.PersistentVolumeClaimHasClass(pvc) && bestVolume(pvs, pvc) == nil {
		// A claim made before there was a default class gets the one there is now.
		if assigned, err := c.assignDefaultClass(ctx, pvc); assigned || err != nil {
			return 0, err
		}
	}
	sc, err := c.Classes.Get(storagehelpers.GetPersistentVolumeClaimClass(pvc))
	if err != nil {
		sc = nil
	}
	if delayed(sc) {
		// WaitForFirstConsumer: only a volume on the node the scheduler chose for the
		// claim's first pod will do, and none before it chose.
		node, ok := pvc.Annotations[storagehelpers.AnnSelectedNode]
		if !ok {
			c.Recorder.Event(pvc, corev1.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
			return 0, nil
		}
		n, err := c.Nodes.Get(node)
		if err != nil {
			return resync, nil
		}
		pvs = slices.DeleteFunc(slices.Clone(pvs), func(pv *corev1.PersistentVolume) bool {
			return storagehelpers.CheckNodeAffinity(pv, n.Labels) != nil
		})
	}
	if pv := bestVolume(pvs, pvc); pv != nil {
		return 0, c.bind(ctx, pv, pvc)
	}
	return c.awaitVolume(ctx, pvc, sc)
}

// assignDefaultClass gives a claim without a class the default one, if there is one now,
// as Kubernetes' binder does since the retroactive default StorageClass (1.28).
func (c *Controller) assignDefaultClass(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	classes, err := c.Classes.List(labels.Everything())
	if err != nil {
		return false, err
	}
	def := defaultstorageclass.Default(classes)
	if def == nil {
		return false, nil
	}
	pvc = pvc.DeepCopy()
	pvc.Spec.StorageClassName = &def.Name
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("give claim %s/%s the default class %s: %w", pvc.Namespace, pvc.Name, def.Name, err)
	}
	return true, nil
}

// delayed tells whether a class binds its claims only once a pod uses them.
func delayed(sc *storagev1.StorageClass) bool {
	return sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// awaitVolume says why a claim no volume fits waits, as Kubernetes' binder words it, and
// marks a claim whose class names a provisioner for that provisioner.
func (c *Controller) awaitVolume(ctx context.Context, pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) (time.Duration, error) {
	class := storagehelpers.GetPersistentVolumeClaimClass(pvc)
	switch {
	case class == "":
		c.Recorder.Event(pvc, corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
		return resync, nil
	case sc == nil:
		c.Recorder.Eventf(pvc, corev1.EventTypeWarning, "ProvisioningFailed", "storageclass.storage.k8s.io %q not found", class)
		return resync, nil
	case sc.Provisioner == storagehelpers.NotSupportedProvisioner:
		c.Recorder.Eventf(pvc, corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no volume plugin matched name: %s", sc.Provisioner)
		return resync, nil
	}
	if pvc.Annotations[storagehelpers.AnnStorageProvisioner] != sc.Provisioner {
		pvc = pvc.DeepCopy()
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[storagehelpers.AnnStorageProvisioner] = sc.Provisioner
		pvc.Annotations[storagehelpers.AnnBetaStorageProvisioner] = sc.Provisioner
		if _, err := c.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("mark claim %s/%s for provisioner %s: %w", pvc.Namespace, pvc.Name, sc.Provisioner, err)
		}
	}
	c.Recorder.Eventf(pvc, corev1.EventTypeNormal, "ExternalProvisioning",
		"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", sc.Provisioner)
	return resync, nil
}

// syncBoundClaim finishes a binding half done (or asked by the user through volumeName),
// and marks a claim whose volume is gone Lost.
func (c *Controller) syncBoundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (time.Duration, error) {
	pv, err := c.PVs.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		if pvc.Status.Phase == corev1.ClaimBound {
			c.Recorder.Event(pvc, corev1.EventTypeWarning, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
			return 0, c.claimPhase(ctx, pvc, corev1.ClaimLost, nil)
		}
		return 0, nil // a claim waiting for the volume it names
	}
	if err != nil {
		return 0, err
	}
	switch r := pv.Spec.ClaimRef; {
	case r == nil:
		if err := mismatch(pv, pvc); err != nil {
			c.Recorder.Eventf(pvc, corev1.EventTypeWarning, "VolumeMismatch", "Cannot bind to requested volume %q: %s", pv.Name, err)
			return resync, nil // the volume may be changed to fit
		}
		return 0, c.bind(ctx, pv, pvc)
	case storagehelpers.IsVolumeBoundToClaim(pv, pvc):
		return 0, c.bind(ctx, pv, pvc) // pre-bound both ways, or a binding a crash interrupted
	}
	return 0, nil
}

// bind points the volume at the claim and the claim at the volume, then marks both Bound;
// each step is idempotent, so a failure part way is finished by the next sync.
func (c *Controller) bind(ctx context.Context, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) error {
	if r := pv.Spec.ClaimRef; r == nil || r.UID != pvc.UID {
		pv = pv.DeepCopy()
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion}
		if pv.Annotations == nil {
			pv.Annotations = map[string]string{}
		}
		pv.Annotations[annBoundByController] = "yes"
		var err error
		if pv, err = c.Client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind volume %s to claim %s/%s: %w", pv.Name, pvc.Namespace, pvc.Name, err)
		}
	}
	if pv.Status.Phase != corev1.VolumeBound {
		pv = pv.DeepCopy()
		pv.Status.Phase = corev1.VolumeBound
		if _, err := c.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("mark volume %s bound: %w", pv.Name, err)
		}
	}
	if pvc.Spec.VolumeName != pv.Name || pvc.Annotations[annBindCompleted] != "yes" {
		pvc = pvc.DeepCopy()
		byController := pvc.Spec.VolumeName == ""
		pvc.Spec.VolumeName = pv.Name
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[annBindCompleted] = "yes"
		if byController {
			pvc.Annotations[annBoundByController] = "yes"
		}
		var err error
		if pvc, err = c.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind claim %s/%s to volume %s: %w", pvc.Namespace, pvc.Name, pv.Name, err)
		}
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return c.claimPhase(ctx, pvc, corev1.ClaimBound, pv)
	}
	return nil
}

// claimPhase writes a claim's phase, with the volume's access modes and capacity when bound.
func (c *Controller) claimPhase(ctx context.Context, pvc *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) error {
	pvc = pvc.DeepCopy()
	pvc.Status.Phase = phase
	if pv != nil {
		pvc.Status.AccessModes = pv.Spec.AccessModes
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: pv.Spec.Capacity[corev1.ResourceStorage]}
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write phase %s of claim %s/%s: %w", phase, pvc.Namespace, pvc.Name, err)
	}
	return nil
}

func (c *Controller) syncVolume(ctx context.Context, name string) (time.Duration, error) {
	pv, err := c.PVs.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil || pv.DeletionTimestamp != nil {
		return 0, err
	}
	ref := pv.Spec.ClaimRef
	if ref == nil {
		if pv.Status.Phase != corev1.VolumeAvailable {
			return 0, c.volumePhase(ctx, pv, corev1.VolumeAvailable)
		}
		return 0, nil
	}
	if ref.UID == "" {
		c.Claims.Add(ref.Namespace + "/" + ref.Name) // pre-bound: the claim's sync binds it
		if pv.Status.Phase != corev1.VolumeAvailable {
			return 0, c.volumePhase(ctx, pv, corev1.VolumeAvailable)
		}
		return 0, nil
	}
	pvc, err := c.PVCs.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err == nil && pvc.UID == ref.UID {
		if pvc.Spec.VolumeName != "" && pvc.Spec.VolumeName != pv.Name {
			return 0, c.releaseFromClaimBoundElsewhere(ctx, pv)
		}
		c.Claims.Add(ref.Namespace + "/" + ref.Name)
		return 0, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	// The cache says the claim is gone: ask the API before releasing its data.
	live, err := c.Client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err == nil && live.UID == ref.UID {
		return 0, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	return 0, c.reclaim(ctx, pv)
}

// releaseFromClaimBoundElsewhere frees a volume whose claim is bound to another volume (a
// bind interrupted and retried on a stale cache), as kube's syncVolume: one provisioned
// for the claim is reclaimed; otherwise the claimRef goes when the controller set it, only
// its UID when a user pre-bound it (kube's unbindVolume), and the volume is Available.
func (c *Controller) releaseFromClaimBoundElsewhere(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != "" && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
		return c.reclaim(ctx, pv)
	}
	pv = pv.DeepCopy()
	if pv.Annotations[annBoundByController] != "" {
		pv.Spec.ClaimRef = nil
		delete(pv.Annotations, annBoundByController)
	} else {
		pv.Spec.ClaimRef.UID = ""
	}
	updated, err := c.Client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("unbind volume %s: %w", pv.Name, err)
	}
	return c.volumePhase(ctx, updated, corev1.VolumeAvailable)
}

// reclaim applies the volume's reclaim policy once its claim is gone.
func (c *Controller) reclaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
		if err := c.volumePhase(ctx, pv, corev1.VolumeReleased); err != nil {
			return err
		}
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		if pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != "" {
			return nil // its provisioner removes the storage, then the volume
		}
		err := c.Client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			c.Recorder.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "%v", err)
			return fmt.Errorf("delete released volume %s: %w", pv.Name, err)
		}
	case corev1.PersistentVolumeReclaimRecycle:
		c.Recorder.Event(pv, corev1.EventTypeWarning, "VolumeFailedRecycle", "Recycle is not supported: the volume stays Released")
	}
	return nil
}

func (c *Controller) volumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase) error {
	pv = pv.DeepCopy()
	pv.Status.Phase = phase
	if _, err := c.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write phase %s of volume %s: %w", phase, pv.Name, err)
	}
	return nil
}
