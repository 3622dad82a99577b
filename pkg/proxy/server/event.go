package server

import (
	"cmp"
	"context"
	"os"
	"time"

	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record/util"
)

// recordStarting records kube-proxy's birth cry on node as kube-proxy's events.k8s.io
// recorder writes it: regarding the Node by name alone (kube-proxy's NodeRef has no UID,
// so `kubectl describe node`, which asks for the node's UID or its name as UID, does not
// list it; `kubectl events --for node/NAME` does), in namespace default, reason Starting,
// action StartKubeProxy, no note, from kube-proxy on this host.
func recordStarting(ctx context.Context, client *apiclient.Client, node string) error {
	return recordEvent(ctx, client, node, corev1.EventTypeNormal, "Starting", "")
}

// recordEvent records one of kube-proxy's Events on node, all of action StartKubeProxy,
// as recordStarting says.
func recordEvent(ctx context.Context, client *apiclient.Client, node, eventType, reason, note string) error {
	return postEvent(ctx, client, corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node}, eventType, reason, "StartKubeProxy", note)
}

// recordServiceHealthcheckFailure records that svc's health check node port could not be
// opened, as kube-proxy's service health server: a Warning regarding the Service, reason
// FailedToStartServiceHealthcheck, action Listen.
func recordServiceHealthcheckFailure(ctx context.Context, client *apiclient.Client, svc types.NamespacedName, note string) error {
	return postEvent(ctx, client, corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: svc.Namespace, Name: svc.Name},
		corev1.EventTypeWarning, "FailedToStartServiceHealthcheck", "Listen", note)
}

// postEvent records an Event regarding an object as kube-proxy's events.k8s.io recorder:
// in the object's namespace (default for a cluster-scoped one), from kube-proxy on this host.
func postEvent(ctx context.Context, client *apiclient.Client, regarding corev1.ObjectReference, eventType, reason, action, note string) error {
	hostname, _ := os.Hostname()
	now := time.Now()
	event := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(regarding.Name, now.UnixNano()), Namespace: cmp.Or(regarding.Namespace, metav1.NamespaceDefault)},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: kubeProxy,
		ReportingInstance:   kubeProxy + "-" + hostname,
		Action:              action,
		Reason:              reason,
		Note:                note,
		Regarding:           regarding,
		Type:                eventType,
	}
	return client.Events.Post().Namespace(event.Namespace).Resource("events").Body(event).Do(ctx).Error()
}

// kubeProxy is the component whose Events miniproxy records, kube-proxy's name.
const kubeProxy = "kube-proxy"
