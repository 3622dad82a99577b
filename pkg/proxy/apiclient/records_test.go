package apiclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestInformersHoldRecords: with proxy.Compact as the transform, as miniproxy runs them, the
// informers hold records, proxy.Records reads them, and an update reaches the event
// handlers (an informer passes on only updates whose resource version changed: records
// keep it).
func TestInformersHoldRecords(t *testing.T) {
	api, client := startWithServices(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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

	setPort(t, ctx, api, "web", 81)
	select {
	case obj := <-updated:
		if r, ok := obj.(*proxy.ServiceRecord); !ok || r.Ports[0].Port != 81 {
			t.Fatalf("update handed %+v, want a/web's record with port 81", obj)
		}
	case <-ctx.Done():
		t.Fatal("the update of a/web reached no handler")
	}
}
