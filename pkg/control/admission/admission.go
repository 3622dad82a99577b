// Package admission holds what the admission plugins under it share: Kubernetes'
// forbidden error for a write, the shared informers they read, and the live lookup that
// covers an informer's lag. The plugins themselves are the packages below it; the chain
// is built in pkg/control/controlplane.
package admission

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Forbidden is the refusal of a write, as k8s.io/apiserver's admission.NewForbidden words
// it (generic.Forbidden, which the registry's own NamespaceLifecycle uses too).
var Forbidden = generic.Forbidden

// Is says whether a is a write of the core resource named (not of a subresource).
func Is(a *generic.Attributes, resource string) bool {
	return a.Resource.Group == "" && a.Resource.Resource == resource && a.Subresource == ""
}

// PodCreate is the pod of a create of a pod, or nil for any other write.
func PodCreate(a *generic.Attributes) *corev1.Pod {
	if a.Operation != generic.Create || !Is(a, "pods") {
		return nil
	}
	pod, _ := a.Object.(*corev1.Pod)
	return pod
}

// readyTimeout is how long a write waits for the plugins' caches to fill, as
// k8s.io/apiserver's admission.Handler.WaitForReady waits.
const readyTimeout = 10 * time.Second

// Informers are the shared informers the plugins read (the process's one factory, of the
// API server's own loopback client) and that client. Plugins register the informers they
// need when they are made; Start begins them once the server serves. Writes the server
// makes itself before that (its bootstrap objects) are not checked against them.
type Informers struct {
	Factory informers.SharedInformerFactory
	Client  kubernetes.Interface
	started atomic.Bool
}

// NewInformers is the plugins' informers of factory; client reads what they lag behind.
func NewInformers(factory informers.SharedInformerFactory, client kubernetes.Interface) *Informers {
	return &Informers{Factory: factory, Client: client}
}

// Start begins the factory's informers registered so far.
func (i *Informers) Start(ctx context.Context) {
	i.Factory.Start(ctx.Done())
	i.started.Store(true)
}

// Wait waits until synced (an informer's HasSynced) is true. It answers false without
// waiting before Start, when there is nothing to read yet; it refuses the write if the
// cache is not filled within readyTimeout.
func (i *Informers) Wait(ctx context.Context, a *generic.Attributes, synced cache.InformerSynced) (bool, error) {
	if !i.started.Load() {
		return false, nil
	}
	if synced() {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) { return synced(), nil }); err != nil {
		return false, Forbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	return true, nil
}

// Started says whether Start has begun the informers: before it, plugins that read only
// objects users register (webhooks, policies) have nothing to apply.
func (i *Informers) Started() bool { return i.started.Load() }

// NewestDefault is, of items that isDefault marks, the newest (then the first by name), as
// Kubernetes' DefaultStorageClass and DefaultIngressClass plugins choose the default class
// when several are marked; the zero T (nil) when none is.
func NewestDefault[T metav1.Object](items []T, isDefault func(T) bool) T {
	var def T
	found := false
	for _, it := range items {
		if !isDefault(it) {
			continue
		}
		if !found {
			def, found = it, true
			continue
		}
		created, newest := it.GetCreationTimestamp(), def.GetCreationTimestamp()
		if created.After(newest.Time) || (created.Equal(&newest) && it.GetName() < def.GetName()) {
			def = it
		}
	}
	return def
}
