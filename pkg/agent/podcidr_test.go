package agent

import (
	"context"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestAwaitPodCIDR: without --pod-cidr minilet registers its Node and takes the podCIDR
// the IPAM controller (played here) writes.
func TestAwaitPodCIDR(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err == nil {
				n.Spec.PodCIDR = "10.244.7.0/24"
				if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err == nil {
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	cidr, err := AwaitPodCIDR(ctx, client, "n1", slog.Default())
	if err != nil || cidr != "10.244.7.0/24" {
		t.Fatalf("AwaitPodCIDR = %q, %v", cidr, err)
	}
}
