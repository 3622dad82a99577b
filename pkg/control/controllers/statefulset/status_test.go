package statefulset

import (
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/history"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStatusCompletesRollingUpdateOnlyWhenReady: as kube's completeRollingUpdate, the
// update revision becomes the current one once every replica runs it AND is ready.
func TestStatusCompletesRollingUpdateOnlyWhenReady(t *testing.T) {
	current := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-2"}}
	pod := func(ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{history.HashLabel: update.Name}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	set := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2),
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}}}

	st := status(set, map[int]*corev1.Pod{0: pod(true), 1: pod(false)}, current, update, time.Now())
	if st.CurrentRevision != current.Name || st.CurrentReplicas != 0 || st.UpdatedReplicas != 2 {
		t.Errorf("one updated pod not ready: current %s/%d updated %d, want %s/0 updated 2",
			st.CurrentRevision, st.CurrentReplicas, st.UpdatedReplicas, current.Name)
	}
	st = status(set, map[int]*corev1.Pod{0: pod(true), 1: pod(true)}, current, update, time.Now())
	if st.CurrentRevision != update.Name || st.CurrentReplicas != 2 {
		t.Errorf("all updated and ready: current %s/%d, want %s/2", st.CurrentRevision, st.CurrentReplicas, update.Name)
	}
}

// TestStatusCountsTerminatingPods: as kube's computeReplicaStatus, a pod being deleted
// still counts in replicas and, running and ready, in readyReplicas (so `kubectl get sts`
// reads 3/3 while a pod is replaced), but in no revision's count.
func TestStatusCountsTerminatingPods(t *testing.T) {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
	ready := func(terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{history.HashLabel: rev.Name}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	set := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}}
	st := status(set, map[int]*corev1.Pod{0: ready(false), 1: ready(false), 2: ready(true)}, rev, rev, time.Now())
	if st.Replicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.UpdatedReplicas != 2 || st.CurrentReplicas != 2 {
		t.Errorf("one of three ready pods terminating: replicas %d ready %d available %d updated %d current %d, want 3 3 3 2 2",
			st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas, st.CurrentReplicas)
	}
}

// TestStatusAlwaysHasCollisionCount: as kube's updateStatefulSet, status.collisionCount is
// always written, 0 until a revision name collides (`kubectl get sts -o yaml` shows it).
func TestStatusAlwaysHasCollisionCount(t *testing.T) {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
	set := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0)}}
	if st := status(set, nil, rev, rev, time.Now()); st.CollisionCount == nil || *st.CollisionCount != 0 {
		t.Errorf("collisionCount %v, want 0", st.CollisionCount)
	}
	set.Status.CollisionCount = ptr.To[int32](2)
	if st := status(set, nil, rev, rev, time.Now()); st.CollisionCount == nil || *st.CollisionCount != 2 {
		t.Errorf("collisionCount %v, want 2", st.CollisionCount)
	}
}
