package statefulset

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/history"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

var minReadyNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// readyFor is a running pod of rev, with its identity label, Ready since d before minReadyNow.
func readyFor(name string, rev *appsv1.ControllerRevision, d time.Duration) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Labels: map[string]string{history.HashLabel: rev.Name, appsv1.StatefulSetPodNameLabel: name}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(minReadyNow.Add(-d))}}}}
}

// TestStatusCountsAvailableAfterMinReadySeconds: as kube's computeReplicaStatus, a pod is
// available once it has been Ready for the set's minReadySeconds.
func TestStatusCountsAvailableAfterMinReadySeconds(t *testing.T) {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
	set := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), MinReadySeconds: 10}}
	pods := map[int]*corev1.Pod{0: readyFor("web-0", rev, 30*time.Second), 1: readyFor("web-1", rev, 2*time.Second)}
	st := status(set, pods, rev, rev, minReadyNow)
	if st.ReadyReplicas != 2 || st.AvailableReplicas != 1 {
		t.Errorf("ready 30s and 2s, minReadySeconds 10: ready %d available %d, want 2 1", st.ReadyReplicas, st.AvailableReplicas)
	}
}

// TestStatusOnDeleteKeepsCurrentRevision: kube's completeRollingUpdate completes only a
// RollingUpdate; an OnDelete set's currentRevision stays where it was even once every pod
// was replaced by hand.
func TestStatusOnDeleteKeepsCurrentRevision(t *testing.T) {
	current := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-2"}}
	set := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1),
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}
	st := status(set, map[int]*corev1.Pod{0: readyFor("web-0", update, time.Minute)}, current, update, minReadyNow)
	if st.CurrentRevision != current.Name || st.CurrentReplicas != 0 || st.UpdatedReplicas != 1 {
		t.Errorf("OnDelete, every pod updated: current %s/%d updated %d, want %s/0 updated 1",
			st.CurrentRevision, st.CurrentReplicas, st.UpdatedReplicas, current.Name)
	}
}

// TestOrderedCreationWaitsForMinReadySeconds: OrderedReady makes the next pod only once its
// predecessor is available (kube's processReplica: "waiting for Pod to be Available"), and a
// rolling update waits for it too.
func TestOrderedCreationWaitsForMinReadySeconds(t *testing.T) {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, Data: runtimeRaw(t)}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), MinReadySeconds: 10}}
	for _, tc := range []struct {
		readyFor time.Duration
		want     bool
	}{{2 * time.Second, false}, {10 * time.Second, true}} {
		client := fake.NewClientset()
		c := &Controller{client: client, recorder: record.NewFakeRecorder(10)}
		pods := map[int]*corev1.Pod{0: readyFor("web-0", rev, tc.readyFor)}
		if err := c.manage(context.Background(), set, pods, rev, rev, minReadyNow); err != nil {
			t.Fatal(err)
		}
		_, err := client.CoreV1().Pods("ns").Get(context.Background(), "web-1", metav1.GetOptions{})
		if created := err == nil; created != tc.want {
			t.Errorf("web-0 ready for %v, minReadySeconds 10: web-1 created %v, want %v", tc.readyFor, created, tc.want)
		}
	}
}

// runtimeRaw is a revision's data for a one-container template.
func runtimeRaw(t *testing.T) runtime.RawExtension {
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: data}
}

// TestParallelRollingUpdatePassesUnavailablePodsBelow: as kube's updateStatefulSet, a
// Parallel set's rolling update deletes the highest outdated pod even while a lower pod is
// unavailable, and waits at an updated pod above it that is not yet available.
func TestParallelRollingUpdatePassesUnavailablePodsBelow(t *testing.T) {
	current := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, Data: runtimeRaw(t)}
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-2"}, Data: runtimeRaw(t)}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), PodManagementPolicy: appsv1.ParallelPodManagement}}
	unready := readyFor("web-0", update, time.Minute)
	unready.Status.Conditions[0].Status = corev1.ConditionFalse
	for _, tc := range []struct {
		name    string
		pods    map[int]*corev1.Pod
		deleted string
	}{
		{"web-0 unready, web-1 and web-2 outdated", map[int]*corev1.Pod{0: unready, 1: readyFor("web-1", current, time.Minute), 2: readyFor("web-2", current, time.Minute)}, "web-2"},
		{"web-2 updated but unready", map[int]*corev1.Pod{0: readyFor("web-0", current, time.Minute), 1: readyFor("web-1", current, time.Minute), 2: func() *corev1.Pod {
			p := unready.DeepCopy()
			p.Name = "web-2"
			return p
		}()}, ""},
	} {
		var objects []runtime.Object
		for _, p := range tc.pods {
			objects = append(objects, p)
		}
		client := fake.NewClientset(objects...)
		c := &Controller{client: client, recorder: record.NewFakeRecorder(10)}
		if err := c.manage(context.Background(), set, tc.pods, current, update, minReadyNow); err != nil {
			t.Fatal(err)
		}
		deleted := ""
		for _, a := range client.Actions() {
			if a.GetVerb() == "delete" {
				deleted = a.(interface{ GetName() string }).GetName()
			}
		}
		if deleted != tc.deleted {
			t.Errorf("%s: deleted %q, want %q", tc.name, deleted, tc.deleted)
		}
	}
}
