package server

import (
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
	api := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	client, err := apiclient.New(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := recordStarting(t.Context(), client, "node-1"); err != nil {
		t.Fatal(err)
	}
	events, err := api.Client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(),
		metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.apiVersion=v1,involvedObject.name=node-1"})
	if err != nil {
		t.Fatal(err)
	}
	hostname, _ := os.Hostname()
	if len(events.Items) != 1 {
		t.Fatalf("events of node-1: %+v; want one", events.Items)
	}
	e := events.Items[0]
	if e.Type != corev1.EventTypeNormal || e.Reason != "Starting" || e.Action != "StartKubeProxy" || e.Message != "" ||
		e.ReportingController != "kube-proxy" || e.ReportingInstance != "kube-proxy-"+hostname || e.EventTime.IsZero() ||
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
	api := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	client, err := apiclient.New(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	note := `node node-1 failed to start healthcheck "default/web" on port 31000: listen tcp4 0.0.0.0:31000: bind: address already in use`
	if err := recordServiceHealthcheckFailure(t.Context(), client, types.NamespacedName{Namespace: "default", Name: "web"}, note); err != nil {
		t.Fatal(err)
	}
	events, err := api.Client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(),
		metav1.ListOptions{FieldSelector: "involvedObject.kind=Service,involvedObject.name=web"})
	if err != nil {
		t.Fatal(err)
	}
	hostname, _ := os.Hostname()
	if len(events.Items) != 1 {
		t.Fatalf("events of service web: %+v; want one", events.Items)
	}
	e := events.Items[0]
	if e.Type != corev1.EventTypeWarning || e.Reason != "FailedToStartServiceHealthcheck" || e.Action != "Listen" || e.Message != note ||
		e.ReportingController != "kube-proxy" || e.ReportingInstance != "kube-proxy-"+hostname ||
		e.InvolvedObject != (corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: "default", Name: "web"}) {
		t.Errorf("event %+v; want kube-proxy's FailedToStartServiceHealthcheck event", e)
	}
}
