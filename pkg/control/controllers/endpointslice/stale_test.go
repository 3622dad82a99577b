package endpointslice

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/serviceslices"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// newUnstarted is a controller whose informers are never started: the test fills their
// caches by hand, so the slice cache lags behind the controller's writes for as long as
// the test wants. Created slices get a name and uid, as the API server gives them.
func newUnstarted(t *testing.T, log *slog.Logger) (*Controller, *fake.Clientset, informers.SharedInformerFactory) {
	t.Helper()
	client := fake.NewClientset()
	created := 0
	client.PrependReactor("create", "endpointslices", func(action clienttesting.Action) (bool, runtime.Object, error) {
		s := action.(clienttesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		created++
		s.Name = fmt.Sprintf("%s%d", s.GenerateName, created)
		s.UID = types.UID(s.Name)
		s.Generation = 1
		return false, nil, nil
	})
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Nodes(),
		f.Discovery().V1().EndpointSlices(), record.NewFakeRecorder(10), log)
	if err != nil {
		t.Fatal(err)
	}
	return c, client, f
}

func addWebServiceAndPod(t *testing.T, f informers.SharedInformerFactory, svcMutate func(*corev1.Service)) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "svc-uid"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
	}
	if svcMutate != nil {
		svcMutate(svc)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "pod-uid", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "img"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5", PodIPs: []corev1.PodIP{{IP: "10.244.1.5"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if err := f.Core().V1().Services().Informer().GetIndexer().Add(svc); err != nil {
		t.Fatal(err)
	}
	if err := f.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	return svc
}

func slicesOf(t *testing.T, client *fake.Clientset) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := client.DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// A sync that runs before the slice cache has seen the controller's own create must not
// create a second slice: it is retried until the cache catches up, as kube's
// EndpointSliceTracker makes it.
func TestNoSecondSliceWhileTheCacheLags(t *testing.T) {
	c, client, f := newUnstarted(t, slog.Default())
	addWebServiceAndPod(t, f, nil)
	ctx := context.Background()
	if _, err := c.sync(ctx, "default/web"); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	_, err := c.sync(ctx, "default/web")
	if got := slicesOf(t, client); len(got) != 1 {
		t.Fatalf("slices after two syncs against a cache that has not seen the first: %d, want 1", len(got))
	}
	if err == nil || err.Error() != "EndpointSlice informer cache is out of date" {
		t.Fatalf("second sync: err %v, want the stale-cache error that retries it", err)
	}
	// Once the cache has the slice, the sync goes through and writes nothing.
	for _, s := range slicesOf(t, client) {
		if err := f.Discovery().V1().EndpointSlices().Informer().GetIndexer().Add(&s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.sync(ctx, "default/web"); err != nil {
		t.Fatalf("sync with the cache caught up: %v", err)
	}
	if got := slicesOf(t, client); len(got) != 1 {
		t.Fatalf("slices: %d, want 1", len(got))
	}
}

// A Service being deleted gets no new slices: the garbage collector is deleting them, as
// kube's reconciler says.
func TestNoSlicesCreatedForAServiceBeingDeleted(t *testing.T) {
	c, client, f := newUnstarted(t, slog.Default())
	addWebServiceAndPod(t, f, func(s *corev1.Service) {
		now := metav1.Now()
		s.DeletionTimestamp = &now
		s.Finalizers = []string{"example.com/hold"}
	})
	if _, err := c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := slicesOf(t, client); len(got) != 0 {
		t.Fatalf("slices created for a Service being deleted: %d", len(got))
	}
}

// A lag that outlasts the retries a cache needs is logged once, with the slices as the
// cache and the API server hold them: here the server has the slice the cache never got.
func TestALastingLagIsReported(t *testing.T) {
	var logs bytes.Buffer
	c, _, f := newUnstarted(t, slog.New(slog.NewTextHandler(&logs, nil)))
	addWebServiceAndPod(t, f, nil)
	ctx := context.Background()
	if _, err := c.sync(ctx, "default/web"); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	const report = "the EndpointSlice cache still lacks this controller's writes"
	for retry := 0; retry <= 10; retry++ {
		if _, err := c.sync(ctx, "default/web"); !errors.Is(err, serviceslices.ErrStaleCache) {
			t.Fatalf("retry %d: err %v, want the stale-cache error", retry, err)
		}
		if reported := strings.Contains(logs.String(), report); reported != (retry == 10) {
			t.Fatalf("retry %d: reported %v, want a report at the tenth retry only; logs:\n%s", retry, reported, logs.String())
		}
		c.Queue.AddRateLimited("default/web")
	}
	if _, err := c.sync(ctx, "default/web"); !errors.Is(err, serviceslices.ErrStaleCache) {
		t.Fatalf("err %v, want the stale-cache error", err)
	}
	if n := strings.Count(logs.String(), report); n != 1 {
		t.Fatalf("reported %d times, want once; logs:\n%s", n, logs.String())
	}
	for _, want := range []string{"service=default/web", "cached=[]", "onServer=\"[web-1 uid=web-1 generation=1 resourceVersion="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("report lacks %q; logs:\n%s", want, logs.String())
		}
	}
}
