package apiclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestInformersHoldRecords: with proxy.Compact as the transform, as miniproxy runs them, the
// informers hold records, proxy.Records reads them, and an update reaches the event
// handlers (an informer passes on only updates whose resource version changed: records
// keep it).
func TestInformersHoldRecords(t *testing.T) {
	api := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := api.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if _, err := api.Client.CoreV1().Services("a").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}}
	if _, err := api.Client.DiscoveryV1().EndpointSlices("a").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	client, err := apiclient.New(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	f := apiclient.NewInformers(client, nil, proxy.Compact)
	services, slices := f.Services(), f.EndpointSlices()
	updated := make(chan any, 10)
	if _, err := services.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) { updated <- obj }}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), services.HasSynced, slices.HasSynced) {
		t.Fatal("informers did not sync")
	}
	src := proxy.Records(services.GetIndexer(), slices.GetIndexer())
	got, err := src.Service("a", "web")
	if err != nil || got == nil || got.ClusterIP == "" || got.ResourceVersion == "" || len(got.Ports) != 1 || got.Ports[0].Port != 80 {
		t.Fatalf("record of a/web: %+v, %v; want its cluster IP, resource version and port", got, err)
	}
	gotSlices, err := src.ServiceSlices("a", "web")
	if err != nil || len(gotSlices) != 1 || len(gotSlices[0].Endpoints) != 1 || gotSlices[0].Endpoints[0].IP != "10.0.0.1" || !gotSlices[0].Endpoints[0].Ready {
		t.Fatalf("slices of a/web: %+v, %v", gotSlices, err)
	}

	s, err := api.Client.CoreV1().Services("a").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Ports[0].Port = 81
	if _, err := api.Client.CoreV1().Services("a").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case obj := <-updated:
		if r, ok := obj.(*proxy.ServiceRecord); !ok || r.Ports[0].Port != 81 {
			t.Fatalf("update handed %+v, want a/web's record with port 81", obj)
		}
	case <-ctx.Done():
		t.Fatal("the update of a/web reached no handler")
	}
}
