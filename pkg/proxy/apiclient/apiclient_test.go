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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// TestInformersListAndWatch: the narrow client's informers list and watch Services,
// EndpointSlices and Nodes from a real miniapi, narrowed by the list options and trimmed by
// the transform, and the listers read them by namespace.
func TestInformersListAndWatch(t *testing.T) {
	svc := func(name string, labels map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, Labels: labels},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	}
	api, client := startWithServices(t, svc("ours", nil), svc("theirs", map[string]string{"other": "yes"}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := apiclient.NewInformers(client, func(o *metav1.ListOptions) { o.LabelSelector = "!other" }, proxy.Trim)
	services, slices, nodes := f.Services(), f.EndpointSlices(), f.Nodes()
	if f.Services() != services {
		t.Fatal("a second Services() made a second informer")
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), services.HasSynced, slices.HasSynced, nodes.HasSynced) {
		t.Fatal("informers did not sync")
	}
	serviceLister := corelisters.NewServiceLister(services.GetIndexer())
	got, err := serviceLister.Services("a").List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "ours" {
		t.Fatalf("Services in a: %v, want only ours (theirs is filtered out by the label selector)", got)
	}
	if got[0].UID != "" || got[0].Spec.ClusterIP == "" {
		t.Fatalf("Service not trimmed as proxy.Trim does, or without its cluster IP: %+v", got[0])
	}
	gotSlices, err := discoverylisters.NewEndpointSliceLister(slices.GetIndexer()).EndpointSlices("a").List(labels.Everything())
	if err != nil || len(gotSlices) != 1 || gotSlices[0].Endpoints[0].Addresses[0] != "10.0.0.1" {
		t.Fatalf("EndpointSlices in a: %v, %v", gotSlices, err)
	}

	// A change is watched.
	setPort(t, ctx, api, "ours", 81)
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		s, err := serviceLister.Services("a").Get("ours")
		return err == nil && s.Spec.Ports[0].Port == 81, nil
	}); err != nil {
		t.Fatalf("the update of ours was not watched: %v", err)
	}
}

// startWithServices starts a control plane holding namespace "a", services (in "a") and
// an EndpointSlice <first>-1 with one endpoint, 10.0.0.1, for the first of them, and
// returns it with the narrow client on it.
func startWithServices(t *testing.T, services ...*corev1.Service) (*controlplanetest.Cluster, *apiclient.Client) {
	t.Helper()
	ctx := t.Context()
	api := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	if _, err := api.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range services {
		if _, err := api.Client.CoreV1().Services("a").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first := services[0].Name
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: first + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: first}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}}
	if _, err := api.Client.DiscoveryV1().EndpointSlices("a").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	return api, client
}

// setPort changes the first port of Service a/name.
func setPort(t *testing.T, ctx context.Context, api *controlplanetest.Cluster, name string, port int32) {
	t.Helper()
	s, err := api.Client.CoreV1().Services("a").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Ports[0].Port = port
	if _, err := api.Client.CoreV1().Services("a").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
