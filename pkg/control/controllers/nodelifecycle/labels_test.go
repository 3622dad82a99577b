package nodelifecycle

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

// TestNodeMetadataAsKube: as kube's node lifecycle controller, a node gets the beta os and
// arch labels its stable ones call for (a wrong one is corrected), and every taint the
// controller adds says when (SwapNodeControllerTaint's timeAdded), NoSchedule ones too.
func TestNodeMetadataAsKube(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)), Labels: map[string]string{
			corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", "beta.kubernetes.io/arch": "arm64"}},
		Spec: corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0)},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0)},
		}},
	}
	client := fake.NewClientset(node)
	c, err := New(client, informers.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(10), record.NewFakeRecorder(10),
		Options{MonitorPeriod: time.Second, GracePeriod: DefaultGracePeriod}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	c.clock = testingclock.NewFakeClock(t0.Add(time.Second))
	if err := c.monitor(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := c.reconcileLabels(ctx, node); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", corev1.LabelOSStable: "linux"} {
		if got.Labels[k] != want {
			t.Errorf("label %s=%q, want %q (labels %v)", k, got.Labels[k], want, got.Labels)
		}
	}
	if len(got.Spec.Taints) != 2 {
		t.Fatalf("taints %v, want memory-pressure and unschedulable", got.Spec.Taints)
	}
	for _, tn := range got.Spec.Taints {
		if tn.TimeAdded == nil || !tn.TimeAdded.Time.Equal(t0.Add(time.Second)) {
			t.Errorf("taint %s:%s timeAdded %v, want %v", tn.Key, tn.Effect, tn.TimeAdded, t0.Add(time.Second))
		}
	}
}
