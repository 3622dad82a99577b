package registry_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

// TestEventsOneStorage: an Event written through events.k8s.io/v1 is the core/v1 Event of
// the same name, its fields under their core names, and the other way round, as in
// kube-apiserver (the Events API conformance test lists what it wrote through
// events.k8s.io with the core client and source=test-controller).
func TestEventsOneStorage(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, ns := context.Background(), c.Namespace
	now := metav1.NowMicro()
	written, err := c.Client.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1"},
		EventTime: now, ReportingController: "test-controller", ReportingInstance: "test-node", Action: "Do", Reason: "Test",
		Note: "a note", Type: corev1.EventTypeNormal, Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p"},
		Series: &eventsv1.EventSeries{Count: 2, LastObservedTime: now}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	core, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "source=test-controller"})
	if err != nil {
		t.Fatal(err)
	}
	if len(core.Items) != 1 || core.Items[0].Name != "e1" || core.Items[0].Message != "a note" || core.Items[0].InvolvedObject.Name != "p" ||
		core.Items[0].ReportingController != "test-controller" || core.Items[0].Series == nil || core.Items[0].Series.Count != 2 ||
		core.Items[0].ResourceVersion != written.ResourceVersion {
		t.Fatalf("core list by source: %+v", core.Items)
	}
	v1List, err := c.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reportingController=test-controller"})
	if err != nil || len(v1List.Items) != 1 || v1List.Items[0].Name != "e1" {
		t.Fatalf("events.k8s.io list by reportingController: %v %+v", err, v1List)
	}
	patched, err := c.Client.CoreV1().Events(ns).Patch(ctx, "e1", types.MergePatchType, []byte(`{"message":"patched"}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.Client.EventsV1().Events(ns).Get(ctx, "e1", metav1.GetOptions{})
	if err != nil || back.Note != "patched" || back.ResourceVersion != patched.ResourceVersion {
		t.Fatalf("events.k8s.io read after a core patch: %v %+v", err, back)
	}
	if err := c.Client.CoreV1().Events(ns).Delete(ctx, "e1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.EventsV1().Events(ns).Get(ctx, "e1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("events.k8s.io read after a core delete: %v", err)
	}
}
