package core_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

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

// TestEventFieldSelectors: every field kube-apiserver selects events by, in each API
// group (core/v1's ToSelectableFields; events.k8s.io/v1's names of the same fields), and
// kube's answer to a field of the other group.
func TestEventFieldSelectors(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, ns := context.Background(), c.Namespace
	now := metav1.Now()
	if _, err := c.Client.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "core"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p", UID: "u1", APIVersion: "v1", ResourceVersion: "7", FieldPath: "spec.containers{c}"},
		Reason:         "BackOff", Message: "m", Type: corev1.EventTypeWarning, Source: corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	micro := metav1.NowMicro()
	if _, err := c.Client.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "new"},
		EventTime: micro, ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-h", Action: "Binding", Reason: "Scheduled",
		Note: "n", Type: corev1.EventTypeNormal, Regarding: corev1.ObjectReference{Kind: "Deployment", Namespace: ns, Name: "d", UID: "u2", APIVersion: "apps/v1"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ core, v1, want string }{
		{"involvedObject.kind=Pod", "regarding.kind=Pod", "core"},
		{"involvedObject.namespace=" + ns + ",involvedObject.name=d", "regarding.namespace=" + ns + ",regarding.name=d", "new"},
		{"involvedObject.uid=u1", "regarding.uid=u1", "core"},
		{"involvedObject.apiVersion=apps/v1", "regarding.apiVersion=apps/v1", "new"},
		{"involvedObject.resourceVersion=7", "regarding.resourceVersion=7", "core"},
		{"involvedObject.fieldPath=spec.containers{c}", "regarding.fieldPath=spec.containers{c}", "core"},
		{"reason=Scheduled", "reason=Scheduled", "new"},
		{"reportingComponent=default-scheduler", "reportingController=default-scheduler", "new"},
		{"type=Warning", "type=Warning", "core"},
		{"type!=Warning,metadata.name=new", "type!=Warning,metadata.name=new", "new"},
		{"metadata.namespace=" + ns + ",source=kubelet", "metadata.namespace=" + ns + ",type=Warning", "core"},
		{"source=default-scheduler", "reason=Scheduled", "new"},
	} {
		core, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: tc.core})
		if err != nil || len(core.Items) != 1 || core.Items[0].Name != tc.want {
			t.Errorf("core/v1 %s: %v %v", tc.core, err, core)
		}
		v1, err := c.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: tc.v1})
		if err != nil || len(v1.Items) != 1 || v1.Items[0].Name != tc.want {
			t.Errorf("events.k8s.io/v1 %s: %v %v", tc.v1, err, v1)
		}
	}
	for _, bad := range []string{"regarding.name", "reportingController", "note"} {
		_, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: bad + "=x"})
		if !apierrors.IsBadRequest(err) || err.Error() != "field label not supported: "+bad {
			t.Errorf("core/v1 %s: %v", bad, err)
		}
	}
	for _, bad := range []string{"involvedObject.name", "source", "reportingComponent"} {
		_, err := c.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: bad + "=x"})
		if !apierrors.IsBadRequest(err) || err.Error() != "field label not supported: "+bad {
			t.Errorf("events.k8s.io/v1 %s: %v", bad, err)
		}
	}
}

// TestEventUpdateImmutable: through events.k8s.io/v1 only an event's series (and metadata)
// may change, with kube's words; through core/v1 anything may, as client-go's
// EventCorrelator patches count, lastTimestamp and message.
func TestEventUpdateImmutable(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, ns := context.Background(), c.Namespace
	now := metav1.NowMicro()
	if _, err := c.Client.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1"},
		EventTime: now, ReportingController: "c", ReportingInstance: "c-1", Action: "Do", Reason: "Test", Note: "a",
		Type: corev1.EventTypeNormal, Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Client.EventsV1().Events(ns).Patch(ctx, "e1", types.MergePatchType, []byte(`{"note":"b"}`), metav1.PatchOptions{})
	// Named by its stored kind, a core Event, as kube names it by its internal kind.
	if want := `Event "e1" is invalid: message: Invalid value: "b": field is immutable`; !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("events.k8s.io note change: %v, want %s", err, want)
	}
	series := []byte(`{"series":{"count":2,"lastObservedTime":"` + now.Format(metav1.RFC3339Micro) + `"}}`)
	if _, err := c.Client.EventsV1().Events(ns).Patch(ctx, "e1", types.MergePatchType, series, metav1.PatchOptions{}); err != nil {
		t.Errorf("events.k8s.io series change: %v", err)
	}
	if _, err := c.Client.CoreV1().Events(ns).Patch(ctx, "e1", types.StrategicMergePatchType, []byte(`{"message":"b","count":2}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("core/v1 message and count change: %v", err)
	}
}

// TestEventRecorderCorrelates: client-go's recorder, which every minik8s component records
// through, keeps one Event per repeated occurrence (count and lastTimestamp patched) and
// folds the 10th distinct message of a reason into "(combined from similar events)", all
// of which needs the API to take its strategic merge patches of events.
func TestEventRecorderCorrelates(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, ns := context.Background(), c.Namespace
	b := record.NewBroadcaster(record.WithContext(ctx))
	defer b.Shutdown()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.Client.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: "node-1"})
	backOff := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: ns, UID: "u1"}}
	similar := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns, UID: "u2"}}
	for i := range 12 {
		rec.Event(backOff, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container c in pod crash")
		rec.Eventf(similar, corev1.EventTypeWarning, "Unhealthy", "Liveness probe failed: try %d", i+1)
	}
	var crash, probe []corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crash, probe = nil, nil
		list, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "crash" {
				crash = append(crash, e)
			} else {
				probe = append(probe, e)
			}
		}
		return len(crash) == 1 && crash[0].Count == 12 && len(probe) == 10 && slices.ContainsFunc(probe, func(e corev1.Event) bool { return e.Count == 3 }), nil
	})
	if err != nil {
		t.Fatalf("crash-looping pod's events %+v, probe's %+v: %v", crash, probe, err)
	}
	if e := crash[0]; e.LastTimestamp.Before(&e.FirstTimestamp) {
		t.Errorf("back-off event's timestamps: first %v last %v", e.FirstTimestamp, e.LastTimestamp)
	}
	for _, e := range probe {
		if e.Count == 3 && e.Message != "(combined from similar events): Liveness probe failed: try 12" {
			t.Errorf("aggregated probe event: %q", e.Message)
		}
	}
}

// TestEventSeriesRecorder: client-go's events.k8s.io recorder, kube-scheduler's, turns a
// repeated event into a series by a strategic merge patch our API takes (the rest of the
// event is immutable there); kubectl describe shows it as "(x2 over ...)".
func TestEventSeriesRecorder(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, ns := context.Background(), c.Namespace
	b := events.NewEventBroadcasterAdapterWithContext(ctx, c.Client)
	b.StartRecordingToSink(ctx.Done())
	defer b.Shutdown()
	rec := b.NewRecorder("default-scheduler")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: ns, UID: "u1"}}
	rec.Eventf(pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/2 nodes are available")
	var got []corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pending"})
		if err != nil {
			return false, err
		}
		got = list.Items
		if len(got) == 1 && got[0].Series == nil {
			rec.Eventf(pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/2 nodes are available")
		}
		return len(got) == 1 && got[0].Series != nil, nil
	})
	if err != nil {
		t.Fatalf("events %+v: %v", got, err)
	}
	if e := got[0]; e.Series.Count != 2 || e.ReportingController != "default-scheduler" || e.Action != "Scheduling" || e.Source.Component != "" {
		t.Errorf("series event: %+v", e)
	}
}
