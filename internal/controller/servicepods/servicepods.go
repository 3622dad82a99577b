// Package servicepods is what the endpoint and endpointslice controllers share: which
// Services select a pod, whether and how a pod is an endpoint, and the port a Service port
// reaches on a pod.
package servicepods

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/endpointslice"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/utils/dump"
)

// Watcher queues the key of every Service whose endpoints a change can affect: the
// Service itself, and the Services selecting a pod before or after it changed.
type Watcher struct {
	Services corelisters.ServiceLister
	Queue    workqueue.TypedRateLimitingInterface[string]
}

// Register adds the handlers to the service and pod informers.
func (w *Watcher) Register(services, pods cache.SharedIndexInformer) error {
	if _, err := services.AddEventHandler(workloop.OnEvery(workloop.Enqueue(w.Queue))); err != nil {
		return err
	}
	_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.enqueueSelecting(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			old, cur := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			if old.ResourceVersion == cur.ResourceVersion {
				return
			}
			w.enqueueSelecting(cur)
			if !labels.Equals(old.Labels, cur.Labels) {
				w.enqueueSelecting(old)
			}
		},
		DeleteFunc: w.enqueueSelecting,
	})
	return err
}

func (w *Watcher) enqueueSelecting(obj any) {
	pod, ok := workloop.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	services, err := w.Services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range services {
		if svc.Spec.Selector != nil && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			w.Queue.Add(pod.Namespace + "/" + svc.Name)
		}
	}
}

// Managed says whether the controllers keep this Service's endpoints: it selects pods and
// is not an ExternalName. A Service without a selector belongs to whoever writes its
// endpoints.
func Managed(svc *corev1.Service) bool {
	return svc.Spec.Selector != nil && svc.Spec.Type != corev1.ServiceTypeExternalName
}

// Selected lists the pods the Service selects that can be endpoints: with an IP and not
// finished (terminating ones included: their conditions say so).
func Selected(pods corelisters.PodLister, svc *corev1.Service) ([]*corev1.Pod, error) {
	list, err := pods.Pods(svc.Namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, p := range list {
		if p.Status.PodIP != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out, nil
}

// Conditions are an endpoint's ready, serving and terminating, as kube's podToEndpoint
// computes them: serving is the pod's readiness, ready is serving and not terminating;
// with publishNotReadyAddresses every pod is ready, and serving still says whether it is.
func Conditions(svc *corev1.Service, pod *corev1.Pod) (ready, serving, terminating bool) {
	terminating = pod.DeletionTimestamp != nil
	serving = endpointsliceutil.IsPodReady(pod)
	ready = svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	return ready, serving, terminating
}

// TargetPort is the pod port a Service port sends to: a number as it is, a name looked up
// among the pod's container ports of the same protocol, then its sidecars' (kube's FindPort).
func TargetPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, error) {
	port, err := endpointslice.FindPort(pod, sp)
	return int32(port), err
}

// SetTriggerTime annotates an Endpoints or EndpointSlice about to be written with the time
// of the change behind the write (a TriggerTimeTracker's), or takes an older one off when
// no change is known, as kube's controllers do (EndpointsLastChangeTriggerTime, which
// latency measurements read).
func SetTriggerTime(meta *metav1.ObjectMeta, t time.Time) {
	if t.IsZero() {
		delete(meta.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	metav1.SetMetaDataAnnotation(meta, corev1.EndpointsLastChangeTriggerTime, t.UTC().Format(time.RFC3339Nano))
}

// SortByHash orders items by the FNV-128a hash of each one's deep printout, the order kube's
// endpoint and endpointslice controllers give ports and Endpoints subsets.
func SortByHash[T any](items []T) {
	type hashed struct {
		sum  []byte
		item T
	}
	hs := make([]hashed, len(items))
	for i, item := range items {
		h := fnv.New128a()
		fmt.Fprintf(h, "%v", dump.ForHash(item))
		hs[i] = hashed{h.Sum(nil), item}
	}
	slices.SortStableFunc(hs, func(a, b hashed) int { return bytes.Compare(a.sum, b.sum) })
	for i := range hs {
		items[i] = hs[i].item
	}
}
