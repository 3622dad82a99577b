package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/allocator"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// newTestServer is a Server on a bbolt store of its own (no network: tests call it directly).
func newTestServer(t testing.TB, st store.Interface, cidr string, advertise string, port int) *Server {
	t.Helper()
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := allocator.NewRanges(st, netip.MustParsePrefix(cidr), allocator.DefaultNodePorts)
	if err != nil {
		t.Fatal(err)
	}
	var addr netip.Addr
	if advertise != "" {
		addr = netip.MustParseAddr(advertise)
	}
	return New(Config{Store: st, Registry: reg, Ranges: ranges, AdvertiseAddress: addr, SecurePort: port,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

// read gets a stored object through the server's own read path.
func read[T runtime.Object](t *testing.T, s *Server, gvr schema.GroupVersionResource, ns, name string) T {
	t.Helper()
	res, _ := s.reg.Lookup(gvr)
	obj, err := s.objects.Get(context.Background(), res, ns, name)
	if err != nil {
		t.Fatalf("read %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return obj.(T)
}

func TestBootstrapPointsTheKubernetesServiceAtTheServer(t *testing.T) {
	ctx := context.Background()
	st := storetest.Bolt(t)
	s := newTestServer(t, st, "10.100.0.0/16", "10.200.0.2", 6443)
	if err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	svc := read[*corev1.Service](t, s, corev1.SchemeGroupVersion.WithResource("services"), "default", "kubernetes")
	if svc.Spec.ClusterIP != "10.100.0.1" || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.IntValue() != 6443 {
		t.Errorf("kubernetes Service: %+v", svc.Spec)
	}
	ep := read[*corev1.Endpoints](t, s, corev1.SchemeGroupVersion.WithResource("endpoints"), "default", "kubernetes")
	if a := ep.Subsets[0]; a.Addresses[0].IP != "10.200.0.2" || a.Ports[0].Port != 6443 || a.Ports[0].Name != "https" {
		t.Errorf("kubernetes Endpoints: %+v", ep.Subsets)
	}
	slice := read[*discoveryv1.EndpointSlice](t, s, discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), "default", "kubernetes")
	if slice.Labels[discoveryv1.LabelServiceName] != "kubernetes" || slice.Endpoints[0].Addresses[0] != "10.200.0.2" || *slice.Ports[0].Port != 6443 {
		t.Errorf("kubernetes EndpointSlice: %+v", slice)
	}
	for _, name := range []string{"system-node-critical", "system-cluster-critical"} {
		pc := read[*schedulingv1.PriorityClass](t, s, schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), "", name)
		if pc.Value < 2000000000 {
			t.Errorf("%s has value %d", name, pc.Value)
		}
	}

	// A graceful stop (RunEndpointReconciler's last step) and a restart on another address
	// and port move the endpoints; the cluster IP stays held.
	if err := s.reconcileEndpoints(ctx, true); err != nil {
		t.Fatal(err)
	}
	s = newTestServer(t, st, "10.100.0.0/16", "10.200.0.3", 7443)
	if err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	svc = read[*corev1.Service](t, s, corev1.SchemeGroupVersion.WithResource("services"), "default", "kubernetes")
	ep = read[*corev1.Endpoints](t, s, corev1.SchemeGroupVersion.WithResource("endpoints"), "default", "kubernetes")
	if svc.Spec.ClusterIP != "10.100.0.1" || svc.Spec.Ports[0].TargetPort.IntValue() != 7443 || ep.Subsets[0].Addresses[0].IP != "10.200.0.3" {
		t.Errorf("after the restart: service %+v, endpoints %+v", svc.Spec, ep.Subsets)
	}
	if err := s.ranges.ServiceIPs.Allocate(ctx, netip.MustParseAddr("10.100.0.1"), &corev1.ObjectReference{UID: "other"}); err == nil {
		t.Error("the kubernetes Service's IP should be held")
	}
}

// TestServersBootstrappingTogether: API servers starting at once on one store all
// bootstrap; the one whose create of an object another just made updates it instead of
// failing (three miniapi of an HA lab exited with "already exists").
func TestServersBootstrappingTogether(t *testing.T) {
	for round := range 5 {
		st := storetest.Bolt(t) // a new cluster each round
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			s := newTestServer(t, st, "10.100.0.0/16", fmt.Sprintf("10.200.%d.%d", round, i+2), 6443)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Bootstrap(context.Background())
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: server %d: %v", round, i, err)
			}
		}
	}
}

func TestBootstrapWithALoopbackAddressMakesNoEndpoints(t *testing.T) {
	s := newTestServer(t, storetest.Bolt(t), "10.96.0.0/12", "127.0.0.1", 6443)
	if err := s.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	read[*corev1.Service](t, s, corev1.SchemeGroupVersion.WithResource("services"), "default", "kubernetes")
	res, _ := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource("endpoints"))
	if _, err := s.objects.Get(context.Background(), res, "default", "kubernetes"); !apierrors.IsNotFound(err) {
		t.Errorf("loopback endpoints are useless to pods and invalid in Kubernetes, want none: %v", err)
	}
}

// The `kubernetes` ServiceCIDR is the Service range, Ready and held by the servicecidrs
// finalizer, as kube-apiserver's default-servicecidr controller leaves it; a restart
// rewrites nothing.
func TestBootstrapMakesTheDefaultServiceCIDRReady(t *testing.T) {
	ctx := context.Background()
	st := storetest.Bolt(t)
	s := newTestServer(t, st, "10.100.0.0/16", "10.200.0.2", 6443)
	if err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	gvr := networkingv1.SchemeGroupVersion.WithResource("servicecidrs")
	sc := read[*networkingv1.ServiceCIDR](t, s, gvr, "", "kubernetes")
	ready := apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
	if !slices.Equal(sc.Spec.CIDRs, []string{"10.100.0.0/16"}) || ready == nil || ready.Status != metav1.ConditionTrue ||
		!slices.Equal(sc.Finalizers, []string{"networking.k8s.io/service-cidr-finalizer"}) {
		t.Fatalf("default ServiceCIDR: %+v", sc)
	}
	s = newTestServer(t, st, "10.100.0.0/16", "10.200.0.2", 6443)
	if err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	if again := read[*networkingv1.ServiceCIDR](t, s, gvr, "", "kubernetes"); again.ResourceVersion != sc.ResourceVersion {
		t.Errorf("a restart rewrote the default ServiceCIDR: resourceVersion %s, was %s", again.ResourceVersion, sc.ResourceVersion)
	}
}

// TestBootstrapObjectsHaveManagedFields: what the server makes at start is written as
// kube-apiserver's loopback client writes it, so its managedFields name the manager a real
// cluster shows: kube-apiserver, and for the flowcontrol objects its APF config producer.
// (Without them, the first server-side apply to such an object made a before-first-apply
// manager.)
func TestBootstrapObjectsHaveManagedFields(t *testing.T) {
	s := newTestServer(t, storetest.Bolt(t), "10.100.0.0/16", "10.200.0.2", 6443)
	if err := s.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gvr      schema.GroupVersionResource
		ns, name string
		manager  string
	}{
		{corev1.SchemeGroupVersion.WithResource("namespaces"), "", "kube-system", "kube-apiserver"},
		{corev1.SchemeGroupVersion.WithResource("services"), "default", "kubernetes", "kube-apiserver"},
		{schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), "", "system-node-critical", "kube-apiserver"},
		{networkingv1.SchemeGroupVersion.WithResource("servicecidrs"), "", "kubernetes", "kube-apiserver"},
		{schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"}, "", "exempt", "api-priority-and-fairness-config-producer-v1"},
		{schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "prioritylevelconfigurations"}, "", "exempt", "api-priority-and-fairness-config-producer-v1"},
	} {
		obj := read[runtime.Object](t, s, tc.gvr, tc.ns, tc.name)
		mf := mustMeta(obj).GetManagedFields()
		if len(mf) == 0 || mf[0].Manager != tc.manager || mf[0].Operation != metav1.ManagedFieldsOperationUpdate || mf[0].FieldsV1 == nil {
			t.Errorf("%s %s managedFields: %+v, want an Update by %s", tc.gvr.Resource, tc.name, mf, tc.manager)
		}
	}
}
