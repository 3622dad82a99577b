package nodettl

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestStepsWithHysteresis: kube's bounds overlap, so a cluster that grew past 100 nodes
// keeps 15 s until it shrinks below 90.
func TestStepsWithHysteresis(t *testing.T) {
	c := &Controller{}
	for _, tc := range []struct{ by, count, ttl int }{
		{100, 100, 0}, {1, 101, 15}, {-10, 91, 15}, {-2, 89, 0}, {411, 500, 15}, {1, 501, 30},
		{1500, 2001, 300}, {-2001, 0, 0},
	} {
		for range max(tc.by, -tc.by) {
			c.resize(tc.by / max(tc.by, -tc.by))
		}
		if c.count != tc.count || c.desired() != tc.ttl {
			t.Fatalf("after %+d: %d nodes, ttl %d; want %d nodes, ttl %d", tc.by, c.count, c.desired(), tc.count, tc.ttl)
		}
	}
}

// TestAnnotatesNodes: every node gets the annotation, and a wrong value is put right.
func TestAnnotatesNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "600", "keep": "x"}}})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Nodes(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), c.synced)
	go c.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got []string
		for _, name := range []string{"a", "b"} {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(n.Annotations))
		}
		if got[0] == "map[node.alpha.kubernetes.io/ttl:0]" && got[1] == "map[keep:x node.alpha.kubernetes.io/ttl:0]" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("annotations %v, want ttl 0 on both, b's other annotation kept", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
