// Package namespace finalizes deleted namespaces: it deletes everything in a Terminating
// namespace, and once nothing is left removes the "kubernetes" finalizer so the API server
// deletes the namespace itself (the seeds' Namespace Controller).
package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/controller/discovered"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// podsGVR are the pods, deleted before the rest of a namespace's content.
var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// contentRetry is how soon a namespace whose content is still going away is looked at again.
const contentRetry = 2 * time.Second

// Controller deletes the content of terminating namespaces.
type Controller struct {
	client    kubernetes.Interface
	metadata  metadata.Interface // the content is listed and deleted by name: metadata is enough
	discovery discovery.DiscoveryInterface
	lister    listers.NamespaceLister
	synced    cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	log       *slog.Logger
}

// New wires the controller to a namespace informer.
func New(client kubernetes.Interface, md metadata.Interface, informer coreinformers.NamespaceInformer, log *slog.Logger) (*Controller, error) {
	c := &Controller{
		client: client, metadata: md, discovery: client.Discovery(),
		lister: informer.Lister(), synced: informer.Informer().HasSynced,
		queue: workloop.NewQueue[string](""),
		log:   log,
	}
	_, err := informer.Informer().AddEventHandler(workloop.OnAddOrUpdate(c.enqueue))
	return c, err
}

func (c *Controller) enqueue(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
		c.queue.Add(ns.Name)
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced)
}

// sync deletes what is left in a terminating namespace, tells in its status conditions what
// still holds it, and finalizes it once it is empty, asking for another look while content
// is still going away.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	ns, found, err := workloop.Found(c.lister.Get(name))
	if !found || ns.DeletionTimestamp == nil {
		return 0, err
	}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return 0, nil // finalized already (through /finalize): its content is no longer ours to delete
	}
	resources, discoveryErr := c.namespacedResources()
	if discoveryErr != nil && len(resources) == 0 {
		return 0, discoveryErr
	}
	left := newContent()
	var deleteErrs []string
	// Pods go first, and nothing else goes while one is left (Kubernetes'
	// OrderedNamespaceDeletion): a terminating pod may still use its ConfigMaps, Secrets,
	// PersistentVolumeClaims and ServiceAccount.
	if slices.Contains(resources, podsGVR) {
		if err := c.deleteAll(ctx, podsGVR, name, left); err != nil {
			deleteErrs = append(deleteErrs, err.Error())
		}
	}
	if len(deleteErrs) == 0 && left.remaining[podsGVR] == 0 {
		for _, gvr := range resources {
			if gvr == podsGVR {
				continue
			}
			// One resource failing does not stop the others from going away.
			if err := c.deleteAll(ctx, gvr, name, left); err != nil {
				deleteErrs = append(deleteErrs, err.Error())
			}
		}
	}
	if err := c.updateConditions(ctx, ns, left.failures(discoveryErr, deleteErrs)); err != nil {
		return 0, err
	}
	switch {
	case len(deleteErrs) > 0:
		return 0, fmt.Errorf("deleting the content of namespace %s: %s", name, strings.Join(deleteErrs, "; "))
	case len(left.remaining) > 0:
		return contentRetry, nil
	}
	// A group that failed discovery (an aggregated API down) does not hold the namespace
	// forever here: what was found is gone, and the condition told about the rest.
	return 0, c.finalize(ctx, ns)
}

// updateConditions writes the deletion conditions to the namespace's status when they change.
func (c *Controller) updateConditions(ctx context.Context, ns *corev1.Namespace, failures map[corev1.NamespaceConditionType][2]string) error {
	out := ns.DeepCopy()
	if !setConditions(&out.Status, failures) {
		return nil
	}
	// The namespace is being deleted: the API server refuses any other phase (as kube's
	// namespace controller, which sets it too).
	out.Status.Phase = corev1.NamespaceTerminating
	_, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// namespacedResources are the resources that can be listed and deleted in a namespace; an
// error with some resources found means some groups could not be discovered.
func (c *Controller) namespacedResources() ([]schema.GroupVersionResource, error) {
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering namespaced resources: %w", err)
	}
	return discovered.Supporting(lists, "list", "delete"), err
}

// deleteAll asks to delete every object of a resource in the namespace and counts into left
// what is still there (graceful pods take their time; finalizers hold others).
func (c *Controller) deleteAll(ctx context.Context, gvr schema.GroupVersionResource, ns string, left content) error {
	client := c.metadata.Resource(gvr).Namespace(ns)
	list, err := client.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s in %s: %w", gvr.Resource, ns, err)
	}
	background := metav1.DeletePropagationBackground
	for _, item := range list.Items {
		if item.DeletionTimestamp != nil {
			continue
		}
		err := client.Delete(ctx, item.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s/%s: %w", gvr.Resource, ns, item.Name, err)
		}
	}
	if len(list.Items) == 0 {
		return nil
	}
	still, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(still.Items) > 0 {
		left.remaining[gvr] = len(still.Items)
	}
	for _, item := range still.Items {
		for _, f := range item.Finalizers {
			left.finalizers[f]++
		}
	}
	return nil
}

// finalize removes our finalizer through the namespace's finalize subresource.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	out := ns.DeepCopy()
	out.Spec.Finalizers = nil
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			out.Spec.Finalizers = append(out.Spec.Finalizers, f)
		}
	}
	_, err := c.client.CoreV1().Namespaces().Finalize(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		c.log.Info("namespace finalized", "namespace", ns.Name)
	}
	return err
}
