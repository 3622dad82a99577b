package nodeipam

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
)

// startController is a controller over client's nodes handing out ranges, its informer
// synced and the subnets in use read.
func startController(t *testing.T, client *fake.Clientset, ranges Ranges, recorder record.EventRecorder) (*Controller, context.Context) {
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Nodes(), ranges, recorder, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := controllertest.StartInformers(t, f)
	c.loadUsed()
	return c, ctx
}

// TestServiceRangeAndDeletingNodes: as kube's range allocator, the subnets that overlap
// the Services' range are never handed out (filterOutServiceRange), and a node being
// deleted gets no subnet (syncNode).
func TestServiceRangeAndDeletingNodes(t *testing.T) {
	ranges, err := ParseRanges("10.0.0.0/24", 26)
	if err != nil {
		t.Fatal(err)
	}
	ranges = ranges.WithoutServices(netip.MustParsePrefix("10.0.0.0/25"))
	now := metav1.Now()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &now, Finalizers: []string{"example.com/hold"}}})
	c, ctx := startController(t, client, ranges, record.NewFakeRecorder(10))
	for name, want := range map[string]string{"going": "", "a": "10.0.0.128/26"} {
		if _, err := c.sync(ctx, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Spec.PodCIDR != want {
			t.Errorf("node %s's podCIDR: %q, want %q", name, n.Spec.PodCIDR, want)
		}
	}
}

// TestAssignmentFailedEvent: as kube's updateCIDRsAllocation, a node whose pod CIDR
// cannot be written after a few tries gets the Event CIDRAssignmentFailed, and the subnet
// stays free for the next try.
func TestAssignmentFailedEvent(t *testing.T) {
	ranges, err := ParseRanges("10.0.0.0/24", 26)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	refuse := func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("nodes"), "a", errors.New("no"))
	}
	client.PrependReactor("update", "nodes", refuse)
	client.PrependReactor("patch", "nodes", refuse)
	recorder := record.NewFakeRecorder(10)
	c, ctx := startController(t, client, ranges, recorder)
	if _, err := c.sync(ctx, "a"); err == nil {
		t.Error("sync of a node whose pod CIDR could not be written: no error")
	}
	select {
	case e := <-recorder.Events:
		if want := "Normal CIDRAssignmentFailed Node a status is now: CIDRAssignmentFailed"; e != want {
			t.Errorf("event %q, want %q", e, want)
		}
	default:
		t.Error("no CIDRAssignmentFailed event")
	}
	if len(c.used) != 0 {
		t.Errorf("subnets held after the failure: %v", c.used)
	}
}
