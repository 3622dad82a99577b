package server

import (
	"context"
	"os"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStartingEvent: on start miniproxy records kube-proxy's birth cry, an events.k8s.io/v1
// Event in default regarding the Node by name alone (no UID, as kube-proxy's NodeRef),
// type Normal, reason Starting, action StartKubeProxy, no note, from kube-proxy on this
// host: `kubectl events --for node/NAME` lists it by kind and name.
func TestStartingEvent(t *testing.T) {
	e := recordedEvent(t, "involvedObject.kind=Node,involvedObject.apiVersion=v1,involvedObject.name=node-1",
		func(ctx context.Context, client *apiclient.Client) error {
			return recordStarting(ctx, client, "node-1")
		})
	if e.Type != corev1.EventTypeNormal || e.Reason != "Starting" || e.Action != "StartKubeProxy" || e.Message != "" || e.EventTime.IsZero() ||
		e.InvolvedObject != (corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-1"}) {
		t.Errorf("event %+v; want kube-proxy's Starting event", e)
	}
}

// TestServiceHealthcheckEvent: a health check node port that cannot be opened is kube-proxy's
// Warning Event regarding the Service (by kind, namespace and name, no UID) in its
// namespace, reason FailedToStartServiceHealthcheck, action Listen, from kube-proxy on this
// host: `kubectl events --for service/NAME` lists it (`kubectl describe`, which asks for
// the UID, does not, as with kube-proxy's).
func TestServiceHealthcheckEvent(t *testing.T) {
	note := `node node-1 failed to start healthcheck "default/web" on port 31000: listen tcp4 0.0.0.0:31000: bind: address already in use`
	e := recordedEvent(t, "involvedObject.kind=Service,involvedObject.name=web", func(ctx context.Context, client *apiclient.Client) error {
		return recordServiceHealthcheckFailure(ctx, client, types.NamespacedName{Namespace: "default", Name: "web"}, note)
	})
	if e.Type != corev1.EventTypeWarning || e.Reason != "FailedToStartServiceHealthcheck" || e.Action != "Listen" || e.Message != note ||
		e.InvolvedObject != (corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: "default", Name: "web"}) {
		t.Errorf("event %+v; want kube-proxy's FailedToStartServiceHealthcheck event", e)
	}
}

// recordedEvent runs record against a real API and returns the one Event in default
// that selector finds, checked to come from kube-proxy on this host.
func recordedEvent(t *testing.T, selector string, record func(context.Context, *apiclient.Client) error) corev1.Event {
	t.Helper()
	api := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	client, err := apiclient.New(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := record(t.Context(), client); err != nil {
		t.Fatal(err)
	}
	events, err := api.Client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 {
		t.Fatalf("events %s: %+v; want one", selector, events.Items)
	}
	e := events.Items[0]
	hostname, _ := os.Hostname()
	if e.ReportingController != "kube-proxy" || e.ReportingInstance != "kube-proxy-"+hostname {
		t.Errorf("event reported by %s %s, want kube-proxy kube-proxy-%s", e.ReportingController, e.ReportingInstance, hostname)
	}
	return e
}
