// Package resourceclaim makes the ResourceClaims of pods' resource claim templates, as
// kube-controller-manager's resourceclaim-controller does: each claim of a pod that names a
// ResourceClaimTemplate gets a claim of its own, POD-CLAIM-xxxxx, from the template (its
// labels, annotations and spec, the annotation resource.kubernetes.io/pod-claim-name),
// owned by the pod (so it goes with it), recorded in the pod's
// status.resourceClaimStatuses; a missing template is the pod's Warning
// FailedResourceClaimCreation. The claims of a pod that is done are deleted. minik8s
// allocates no device (no DRA driver publishes any), so the claims stay pending.
package resourceclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	resourceinformers "k8s.io/client-go/informers/resource/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/internal/controller/workloop"
)

// Name is the controller's name, as kube-controller-manager's --controllers knows it.
const Name = "resourceclaim-controller"

const (
	// fieldManager is kube's, for the pod status it applies.
	fieldManager = "ResourceClaimController"
	// maxBaseLen leaves room in a 63-character name for the generated suffix.
	maxBaseLen = 57
)

// Controller makes and deletes pods' generated ResourceClaims.
type Controller struct {
	client    kubernetes.Interface
	pods      corelisters.PodLister
	claims    resourcelisters.ResourceClaimLister
	templates resourcelisters.ResourceClaimTemplateLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	log       *slog.Logger
}

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, pods coreinformers.PodInformer, claims resourceinformers.ResourceClaimInformer,
	templates resourceinformers.ResourceClaimTemplateInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, pods: pods.Lister(), claims: claims.Lister(), templates: templates.Lister(), recorder: recorder, log: log,
		synced: []cache.InformerSynced{pods.Informer().HasSynced, claims.Informer().HasSynced, templates.Informer().HasSynced},
		queue:  workloop.NewQueue[string]("resource_claim")}
	enqueuePod := func(obj any) {
		if pod, ok := workloop.Object[*corev1.Pod](obj); ok && len(pod.Spec.ResourceClaims) > 0 {
			c.queue.Add(pod.Namespace + "/" + pod.Name)
		}
	}
	if _, err := pods.Informer().AddEventHandler(workloop.OnAddOrUpdate(enqueuePod)); err != nil {
		return nil, err
	}
	// A claim deleted under its pod is made again; a template that appears serves the
	// pods that waited for it.
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if claim, ok := workloop.Object[*resourcev1.ResourceClaim](obj); ok {
			if ref := metav1.GetControllerOf(claim); ref != nil && ref.Kind == "Pod" {
				c.queue.Add(claim.Namespace + "/" + ref.Name)
			}
		}
	}}); err != nil {
		return nil, err
	}
	_, err := templates.Informer().AddEventHandler(workloop.OnAddOrUpdate(func(obj any) {
		if t, ok := workloop.Object[*resourcev1.ResourceClaimTemplate](obj); ok {
			waiting, _ := c.pods.Pods(t.Namespace).List(labels.Everything())
			for _, pod := range waiting {
				enqueuePod(pod)
			}
		}
	}))
	return c, err
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced...)
}

func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	pod, found, err := workloop.Lookup(key, c.pods.Pods)
	if !found {
		return 0, err
	}
	if done(pod) {
		return 0, c.deleteClaims(ctx, pod)
	}
	if pod.DeletionTimestamp != nil {
		return 0, nil
	}
	made := map[string]string{}
	for i := range pod.Spec.ResourceClaims {
		podClaim := &pod.Spec.ResourceClaims[i]
		if err := c.ensureClaim(ctx, pod, podClaim, made); err != nil {
			c.recorder.Event(pod, corev1.EventTypeWarning, "FailedResourceClaimCreation", fmt.Sprintf("PodResourceClaim %s: %v", podClaim.Name, err))
			return 0, fmt.Errorf("pod %s, PodResourceClaim %s: %w", key, podClaim.Name, err)
		}
	}
	if len(made) == 0 {
		return 0, nil
	}
	status := corev1apply.PodStatus()
	for podClaim, claim := range made {
		status.WithResourceClaimStatuses(corev1apply.PodResourceClaimStatus().WithName(podClaim).WithResourceClaimName(claim))
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).ApplyStatus(ctx, corev1apply.Pod(pod.Name, pod.Namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	return 0, err
}

// ensureClaim makes the claim of podClaim, if it comes from a template and the pod's status
// names none that is the pod's, and records it in made; a claim the pod owns but whose
// name its status lost is found again rather than made twice.
func (c *Controller) ensureClaim(ctx context.Context, pod *corev1.Pod, podClaim *corev1.PodResourceClaim, made map[string]string) error {
	name, checkOwner, err := resourceclaim.Name(pod, podClaim)
	switch {
	case errors.Is(err, resourceclaim.ErrClaimNotFound):
	case err != nil:
		return fmt.Errorf("checking for claim before creating it: %w", err)
	case name == nil:
		return nil
	default:
		claim, err := c.claims.ResourceClaims(pod.Namespace).Get(*name)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if claim != nil && (!checkOwner || resourceclaim.IsForPod(pod, claim, false) == nil) {
			return nil
		}
	}
	if podClaim.ResourceClaimTemplateName == nil {
		return nil
	}
	if claim := c.ownedClaim(pod, podClaim.Name); claim != nil {
		made[podClaim.Name] = claim.Name
		return nil
	}
	template, err := c.templates.ResourceClaimTemplates(pod.Namespace).Get(*podClaim.ResourceClaimTemplateName)
	if err != nil {
		return fmt.Errorf("resource claim template %q: %w", *podClaim.ResourceClaimTemplateName, err)
	}
	annotations := maps.Clone(template.Spec.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[resourcev1.PodResourceClaimAnnotation] = podClaim.Name
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: generateName(pod.Name, podClaim.Name),
			// The pod's controller, without blockOwnerDeletion, as kube's controller sets it.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}},
			Annotations:     annotations,
			Labels:          template.Spec.Labels,
		},
		Spec: template.Spec.Spec,
	}
	claim, err = c.client.ResourceV1().ResourceClaims(pod.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ResourceClaim %s: %w", generateName(pod.Name, podClaim.Name), err)
	}
	made[podClaim.Name] = claim.Name
	return nil
}

// ownedClaim is the claim made for the pod's claim podClaim, if the informer has one.
func (c *Controller) ownedClaim(pod *corev1.Pod, podClaim string) *resourcev1.ResourceClaim {
	claims, _ := c.claims.ResourceClaims(pod.Namespace).List(labels.Everything())
	for _, claim := range claims {
		if claim.Annotations[resourcev1.PodResourceClaimAnnotation] == podClaim && metav1.IsControlledBy(claim, pod) {
			return claim
		}
	}
	return nil
}

// deleteClaims deletes the claims made for a pod that is done.
func (c *Controller) deleteClaims(ctx context.Context, pod *corev1.Pod) error {
	claims, err := c.claims.ResourceClaims(pod.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, claim := range claims {
		if _, generated := claim.Annotations[resourcev1.PodResourceClaimAnnotation]; !generated || !metav1.IsControlledBy(claim, pod) {
			continue
		}
		err := c.client.ResourceV1().ResourceClaims(claim.Namespace).Delete(ctx, claim.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// done: the pod no longer needs its claims, as kube's isPodDone: it ended, or it is being
// deleted and was never scheduled.
func done(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
		pod.DeletionTimestamp != nil && pod.Spec.NodeName == ""
}

// generateName is POD-CLAIM-, both cut in proportion to fit a name of 63 characters, as
// kube's controller cuts them (the API server would cut the end, the claim's name).
func generateName(pod, claim string) string {
	name := pod + "-" + claim + "-"
	if len(name) > maxBaseLen {
		name = pod[:len(pod)*maxBaseLen/len(name)] + "-" + claim[:len(claim)*maxBaseLen/len(name)]
	}
	return name
}
