// Package ephemeral is kube-controller-manager's ephemeral-volume controller: for each
// generic ephemeral volume of a pod it makes the PersistentVolumeClaim POD-VOLUME from
// the volume's claim template, owned by the pod (so the claim goes with it), and makes it
// again if it is deleted while the pod is there. A claim of that name the pod does not
// own is never used: the pod gets a Warning and waits.
package ephemeral

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/minik8s/minik8s/internal/controller/workloop"
)

// Name is the controller's name in --controllers; EventSource the component of its Events.
const (
	Name        = "ephemeral-volume-controller"
	EventSource = "ephemeral_volume"
)

// Controller makes the claims of pods' ephemeral volumes.
type Controller struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	pvcs     corelisters.PersistentVolumeClaimLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	log      *slog.Logger
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, pods coreinformers.PodInformer, pvcs coreinformers.PersistentVolumeClaimInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, pods: pods.Lister(), pvcs: pvcs.Lister(), recorder: recorder, log: log,
		synced: []cache.InformerSynced{pods.Informer().HasSynced, pvcs.Informer().HasSynced},
		queue:  workloop.NewQueue[string](EventSource)}
	if _, err := pods.Informer().AddEventHandler(workloop.OnAddOrUpdate(func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			c.enqueue(pod)
		}
	})); err != nil {
		return nil, err
	}
	// A claim deleted while its pod is there is made again.
	_, err := pvcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		pvc, ok := workloop.Object[*corev1.PersistentVolumeClaim](obj)
		if !ok {
			return
		}
		pods, err := c.pods.Pods(pvc.Namespace).List(labels.Everything())
		if err != nil {
			return
		}
		for _, pod := range pods {
			for i := range pod.Spec.Volumes {
				if v := &pod.Spec.Volumes[i]; v.Ephemeral != nil && ephemeral.VolumeClaimName(pod, v) == pvc.Name {
					c.enqueue(pod)
				}
			}
		}
	}})
	return c, err
}

// enqueue queues a pod that has an ephemeral volume and is not being deleted.
func (c *Controller) enqueue(pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if v.Ephemeral != nil {
			c.queue.Add(pod.Namespace + "/" + pod.Name)
			return
		}
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	pod, found, err := workloop.Lookup(key, c.pods.Pods)
	if !found || pod.DeletionTimestamp != nil {
		return 0, err
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Ephemeral == nil {
			continue
		}
		if err := c.ensureClaim(ctx, pod, v); err != nil {
			c.recorder.Event(pod, corev1.EventTypeWarning, "FailedBinding", fmt.Sprintf("ephemeral volume %s: %v", v.Name, err))
			return 0, fmt.Errorf("pod %s, ephemeral volume %s: %w", key, v.Name, err)
		}
	}
	return 0, nil
}

// ensureClaim makes the claim of ephemeral volume v unless it is there; one there that
// the pod does not own is an error.
func (c *Controller) ensureClaim(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) error {
	name := ephemeral.VolumeClaimName(pod, v)
	pvc, err := c.pvcs.PersistentVolumeClaims(pod.Namespace).Get(name)
	switch {
	case err == nil:
		return ephemeral.VolumeIsForPod(pod, pvc)
	case !apierrors.IsNotFound(err):
		return err
	}
	template := v.Ephemeral.VolumeClaimTemplate
	pvc = &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))},
			Labels:          template.Labels,
			Annotations:     template.Annotations,
		},
		Spec: template.Spec,
	}
	_, err = c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Created by this pod's last sync, before the informer saw it (the scheduler's status
		// write queues the pod again at once): whose it is, the API says.
		if pvc, getErr := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{}); getErr == nil {
			return ephemeral.VolumeIsForPod(pod, pvc)
		}
	}
	if err != nil {
		return fmt.Errorf("create PVC %s: %w", name, err)
	}
	return nil
}
