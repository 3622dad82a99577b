package server

import (
	"os"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
