// Package podsource feeds minilet's pod workers the pods its node runs, from the kubelet's
// two pod sources (its pkg/kubelet/config): the static-pod manifest directory
// (--pod-manifest-path), which needs no API server, and the API server's pods bound to the
// node. It keeps the API's mirror pods of the static pods in line with them.
package podsource

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/staticpod"
	"github.com/minik8s/minik8s/pkg/agent/status"
)

// Workers run the pods the sources hear of (pkg/agent/podworkers).
type Workers interface {
	// Update hands a pod to its worker for a sync.
	Update(pod *corev1.Pod)
	// Reconcile hands a pod to its worker without a sync; false when it has none.
	Reconcile(pod *corev1.Pod) bool
	Remove(uid types.UID)
}

// Config is what the sources read from and feed.
type Config struct {
	NodeName string
	// ManifestPath is the static pods' directory; "" for none.
	ManifestPath       string
	FileCheckFrequency time.Duration
	Client             kubernetes.Interface
	Workers            Workers
	// NodeEvent records an event about the node (a manifest ignored, a mirror not made).
	NodeEvent func(eventType, reason, format string, args ...any)
	Log       *slog.Logger
}

// Sources are the node's pod sources.
type Sources struct {
	cfg     Config
	mirrors *staticpod.Mirrors

	mu     sync.Mutex
	static map[types.UID]*corev1.Pod // the static pods, by UID
	// kick asks the mirror sync to bring the mirror pods in line now.
	kick chan struct{}

	lister corelisters.PodLister
	synced atomic.Bool // the pod informer has synced: lister may be read
}

// New makes the sources cfg describes; nothing runs before their Run methods.
func New(cfg Config) *Sources {
	s := &Sources{cfg: cfg, kick: make(chan struct{}, 1)}
	s.mirrors = &staticpod.Mirrors{Client: cfg.Client, Node: cfg.NodeName, Log: cfg.Log,
		Failed: func(format string, args ...any) {
			cfg.NodeEvent(corev1.EventTypeWarning, "FailedMirrorPod", format, args...)
		}}
	return s
}

// RunAPI feeds the workers the pods the API server binds to the node until ctx ends.
// Once its informer has synced and before the workers hear of any API pod, synced runs:
// the startup reconciliation, which may now tell a known pod from an orphan.
func (s *Sources) RunAPI(ctx context.Context, synced func(context.Context)) {
	factory := informers.NewSharedInformerFactoryWithOptions(s.cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", s.cfg.NodeName).String()
		}))
	podInformer := factory.Core().V1().Pods()
	informer := podInformer.Informer()
	s.lister = podInformer.Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	s.synced.Store(true) // publishes lister to the other goroutines
	synced(ctx)
	if _, err := informer.AddEventHandler(s.eventHandler()); err != nil {
		s.cfg.Log.Error("watch pods", "err", err)
		return
	}
	s.SyncMirrors(ctx)
	<-ctx.Done()
}

// Synced tells whether the API's pods are known (before, every API pod would look like
// an orphan).
func (s *Sources) Synced() bool { return s.synced.Load() }

func (s *Sources) eventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.podChanged(obj) },
		UpdateFunc: func(old, obj any) {
			was, ok1 := old.(*corev1.Pod)
			pod, ok2 := obj.(*corev1.Pod)
			if ok1 && ok2 && !differSemantically(was, pod) {
				s.podReconciled(pod)
				return
			}
			s.podChanged(obj)
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			pod, ok := obj.(*corev1.Pod)
			switch {
			case !ok:
			case staticpod.IsMirror(pod):
				s.mirrorsChanged() // a deleted mirror comes back
			default:
				s.cfg.Workers.Remove(pod.UID)
			}
		},
	}
}

func (s *Sources) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	switch {
	case !ok || pod.Spec.NodeName != s.cfg.NodeName:
	case staticpod.IsMirror(pod): // its static pod runs; the mirror only shows it
		if pod.DeletionTimestamp != nil {
			s.mirrorsChanged()
		} else if sp := s.staticPod(types.UID(pod.Annotations[staticpod.AnnotationMirror])); sp != nil {
			// As the kubelet syncs a static pod on news of its mirror: a mirror made anew
			// gets the pod's status at once.
			s.cfg.Workers.Update(sp)
		}
	default:
		s.cfg.Workers.Update(pod)
	}
}

// differSemantically reports whether an update of a pod changes what the node runs, as the
// kubelet's podsDifferSemantically: its spec, labels, annotations or deletion. Else only
// its status changed (minilet's own writes coming back, other writers' conditions).
func differSemantically(old, pod *corev1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(old.Spec, pod.Spec) ||
		!maps.Equal(old.Labels, pod.Labels) || !maps.Equal(old.Annotations, pod.Annotations) ||
		!old.DeletionTimestamp.Equal(pod.DeletionTimestamp) ||
		!ptr.Equal(old.DeletionGracePeriodSeconds, pod.DeletionGracePeriodSeconds)
}

// podReconciled hands the workers a pod whose status alone changed without waking its
// worker, as the kubelet's HandlePodReconcile: a sync comes only for a Ready condition out
// of line with the pod's containers and readiness gates (status.NeedsReadinessSync). Its retry of pending resizes has no use here: a
// deferred resize is retried on its pod's own timer (podsync's resizeRetry). A mirror's
// status is the static pod's, which its worker writes: nothing to do.
func (s *Sources) podReconciled(pod *corev1.Pod) {
	switch {
	case pod.Spec.NodeName != s.cfg.NodeName || staticpod.IsMirror(pod):
	case status.NeedsReadinessSync(pod) || !s.cfg.Workers.Reconcile(pod):
		s.cfg.Workers.Update(pod) // out of line, or no worker yet: as a new pod
	}
}

// Pods lists the pods this node runs: its static pods, and the pods bound to it as the
// informer knows them (none before it has synced); mirror pods are not among them.
func (s *Sources) Pods() []*corev1.Pod {
	pods := s.staticPods()
	if !s.synced.Load() {
		return pods
	}
	for _, pod := range s.apiPods() {
		if pod.Spec.NodeName == s.cfg.NodeName && !staticpod.IsMirror(pod) {
			pods = append(pods, pod)
		}
	}
	return pods
}

// apiPods are the pods bound to this node as the informer has them, mirrors included.
func (s *Sources) apiPods() []*corev1.Pod {
	all, _ := s.lister.List(labels.Everything()) // a lister's List never fails
	return all
}
