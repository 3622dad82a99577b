package queue

import (
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func pod(name string, prio int32) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{Priority: ptr.To(prio)}}
}

func TestOrderAndBackoff(t *testing.T) {
	now := time.Unix(1000, 0)
	events := map[string][]framework.ClusterEvent{"NodeResourcesFit": {{Kind: framework.KindPod, Action: framework.Delete}}}
	q := New(events, time.Second, 10*time.Second)
	q.now = func() time.Time { return now }
	q.Add(pod("low", 0))
	now = now.Add(time.Millisecond)
	q.Add(pod("high", 100))
	now = now.Add(time.Millisecond)
	q.Add(pod("low2", 0))
	var order []string
	for range 3 {
		order = append(order, q.Pop().Pod.Name)
	}
	if order[0] != "high" || order[1] != "low" || order[2] != "low2" {
		t.Fatalf("pop order %v, want priority then arrival", order)
	}
	// low failed on resources: parked until a pod is deleted, not on a node label change.
	cycle := q.SchedulingCycle()
	qp := &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod("low", 0)), key: "ns/low", Attempts: 1, UnschedulablePlugins: map[string]bool{"NodeResourcesFit": true}}
	q.inFlight["ns/low"] = qp.Pod
	q.AddUnschedulable(qp, cycle)
	if l := q.Lengths(); l["unschedulable"] != 1 {
		t.Fatalf("lengths %v, want one unschedulable", l)
	}
	q.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindNode, Action: framework.UpdateNodeLabel}, nil)
	if l := q.Lengths(); l["unschedulable"] != 1 {
		t.Fatalf("moved on an event NodeResourcesFit did not register: %v", l)
	}
	q.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindPod, Action: framework.Delete}, nil)
	if l := q.Lengths(); l["backoff"] != 1 {
		t.Fatalf("after a pod deletion within the back-off: %v, want it in backoffQ", l)
	}
	now = now.Add(1100 * time.Millisecond)
	q.flushBackoff()
	if l := q.Lengths(); l["active"] != 1 {
		t.Fatalf("after the back-off: %v, want it active", l)
	}
	if q.backoffFor(1) != time.Second || q.backoffFor(2) != 2*time.Second || q.backoffFor(5) != 10*time.Second {
		t.Errorf("back-off 1s doubling to 10s: %v %v %v", q.backoffFor(1), q.backoffFor(2), q.backoffFor(5))
	}
}

func TestGatesAndUpdates(t *testing.T) {
	q := New(nil, time.Second, 10*time.Second)
	gated := pod("g", 0)
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}}
	q.Add(gated)
	if l := q.Lengths(); l["gated"] != 1 || l["active"] != 0 {
		t.Fatalf("gated pod: %v", l)
	}
	q.Update(pod("g", 0))
	if l := q.Lengths(); l["gated"] != 0 || l["active"] != 1 {
		t.Fatalf("gate removed: %v", l)
	}
	q.Delete(pod("g", 0))
	if l := q.Lengths(); l["active"] != 0 {
		t.Fatalf("deleted: %v", l)
	}
	// A failure while an event came in goes to backoffQ, not among the unschedulable.
	q.Add(pod("p", 0))
	qp := q.Pop()
	cycle := q.SchedulingCycle()
	q.MoveOnEvent(framework.ClusterEvent{Kind: framework.KindNode, Action: framework.Add}, nil)
	qp.UnschedulablePlugins = map[string]bool{"X": true}
	q.AddUnschedulable(qp, cycle)
	if l := q.Lengths(); l["backoff"] != 1 {
		t.Fatalf("failure racing an event: %v", l)
	}
}
