// Package controllertest holds what the controllers' tests share: starting informers,
// waiting for a controller to bring the cluster to a state, playing the kubelet of the pods
// it makes, and listers for a sync tested without informers.
package controllertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// poll is how often a condition is looked at again.
const poll = 100 * time.Millisecond

// WaitFor looks at cond now and every poll until it holds, failing t after within (stretched
// by testenv.Timeout) with what it waited for and the last state cond reported. cond runs on
// the test's goroutine, so it may fail t itself.
func WaitFor(t testing.TB, what string, within time.Duration, cond func() (ok bool, state string)) {
	t.Helper()
	within = testenv.Timeout(within)
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), poll, within, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	switch {
	case err == nil:
	case last != "":
		t.Fatalf("timed out after %v waiting for %s; last: %s", within, what, last)
	default:
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// Until is WaitFor for a condition with no state to report.
func Until(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	WaitFor(t, what, within, func() (bool, string) { return cond(), "" })
}

// Eventually is WaitFor for a state that must come to read want.
func Eventually(t testing.TB, what string, within time.Duration, got func() string, want string) {
	t.Helper()
	WaitFor(t, fmt.Sprintf("%s: %q", what, want), within, func() (bool, string) {
		g := got()
		return g == want, g
	})
}

// StartInformers starts factory's informers for the length of the test and returns once
// their caches are full, with the test's context for the calls that follow.
func StartInformers(t testing.TB, factory informers.SharedInformerFactory) context.Context {
	ctx := t.Context()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return ctx
}

// MarkReady plays pod's kubelet: the pod runs and is Ready. It retries on conflict (the
// scheduler writes the status of unbound pods too) and leaves alone a namesake that
// replaced pod; marked says whether pod itself was marked.
func MarkReady(ctx context.Context, c kubernetes.Interface, pod *corev1.Pod) (marked bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || p.UID != pod.UID {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if _, err = c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err == nil {
			marked = true
		}
		return err
	})
	return marked, err
}

// HoldTerminating deletes namespace's pod and keeps it terminating until release. The
// pod is bound first, to an unschedulable node named after the namespace, as a running
// pod is: one never scheduled is marked Failed by the pod GC's next look (every 20 s),
// which ends its terminating. A finalizer keeps it; release drops it and force-deletes
// the pod, as no kubelet will end it.
func HoldTerminating(t testing.TB, c kubernetes.Interface, namespace, pod string) (release func()) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: namespace}, Spec: corev1.NodeSpec{Unschedulable: true}}
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}) })
	pods := c.CoreV1().Pods(namespace)
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod}, Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const hold = `{"metadata":{"finalizers":["example.com/hold"]}}`
	if _, err := pods.Patch(ctx, pod, types.MergePatchType, []byte(hold), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := pods.Patch(ctx, pod, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// PodQuota creates a ResourceQuota "pods" allowing namespace that many pods, and waits
// for the quota controller to write its status: the API enforces a quota only from then.
func PodQuota(t testing.TB, c kubernetes.Interface, namespace string, pods int64) {
	t.Helper()
	ctx := context.Background()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}}}
	if _, err := c.CoreV1().ResourceQuotas(namespace).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "the pod quota's status", 20*time.Second, func() (bool, string) {
		got, err := c.CoreV1().ResourceQuotas(namespace).Get(ctx, quota.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Hard != nil, fmt.Sprintf("%+v", got.Status)
	})
}

// Indexer is a lister's store holding objects, for a controller's sync tested without
// informers.
func Indexer(objects ...any) cache.Indexer {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objects {
		_ = indexer.Add(o)
	}
	return indexer
}

// Workload is what the sync of a controller of pods and revisions (DaemonSet, StatefulSet)
// sees when tested without informers: a client holding every object and listers of the
// pods and revisions.
type Workload struct {
	Client    *fake.Clientset
	Pods      corelisters.PodLister
	Revisions appslisters.ControllerRevisionLister
}

// NewWorkload is a Workload whose client holds objs, pods and revs.
func NewWorkload(objs []runtime.Object, pods []*corev1.Pod, revs []*appsv1.ControllerRevision) Workload {
	var podObjs, revObjs []any
	for _, p := range pods {
		objs, podObjs = append(objs, p), append(podObjs, p)
	}
	for _, r := range revs {
		objs, revObjs = append(objs, r), append(revObjs, r)
	}
	return Workload{Client: fake.NewClientset(objs...), Pods: corelisters.NewPodLister(Indexer(podObjs...)),
		Revisions: appslisters.NewControllerRevisionLister(Indexer(revObjs...))}
}
