package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
)

// BenchmarkDeploymentCycle is controllerbench's scheduling work without the API: a
// Deployment's pods (app=bench, selected by their ReplicaSet, so the default spread
// constraints apply) placed one cycle each with the default profile on 500 empty nodes in
// ten zones; each placed pod is assumed, so every cycle sees the last one's node changed,
// as in the real run, with one worker and with two (the scheduler's default here: one per
// core). -benchtime 3000x is controllerbench's 3000 replicas.
func BenchmarkDeploymentCycle(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprint("parallelism=", workers), func(b *testing.B) { deploymentCycles(b, workers) })
	}
}

func deploymentCycles(b *testing.B, workers int) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	labels := map[string]string{"app": "bench"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "default"}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	_ = factory.Apps().V1().ReplicaSets().Informer().GetStore().Add(rs)
	s, err := New(Config{Client: client, Informers: factory, Log: slog.New(slog.DiscardHandler),
		Recorder: func(string) events.EventRecorder { return events.NewFakeRecorder(0) }})
	if err != nil {
		b.Fatal(err)
	}
	prof := s.profiles[Name]
	prof.Parallelism = workers
	for i := range 500 {
		name := fmt.Sprintf("node-%04d", i)
		s.cache.AddNode(schedtest.Node(name, map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%10)}))
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		pi := framework.NewPodInfo(schedtest.Pod(fmt.Sprint("new-", i), labels, 10))
		s.cache.UpdateSnapshot(s.snapshot)
		node, err := s.schedulePod(ctx, prof, framework.NewCycleState(), pi)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.cache.AssumePod(pi, node); err != nil {
			b.Fatal(err)
		}
	}
}
