package nodeipam_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controllers/nodeipam"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseRanges(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		size int
		err  string
	}{
		{"10.244.0.0/16", 24, ""},
		{"10.244.0.0/16", 8, "must be between"},
		{"fd00::/64", 80, "not an IPv4 CIDR"},
	} {
		_, err := nodeipam.ParseRanges(tc.cidr, tc.size)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseRanges(%s, %d) = %v, want %q", tc.cidr, tc.size, err, tc.err)
		}
	}
}

// TestNodesGetDistinctPodCIDRs: new nodes get the free /26s of a /24 in order, a node that
// brought its own keeps it (and it is not handed out twice), and the range runs out with
// an Event.
func TestNodesGetDistinctPodCIDRs(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) { o.ClusterCIDR, o.NodeCIDRMaskSize = "10.50.0.0/24", 26 })
	ctx := context.Background()
	nodes := cl.Client.CoreV1().Nodes()
	mk := func(name, cidr string) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if cidr != "" {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
		}
		if _, err := nodes.Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("own", "10.50.0.64/26")
	for _, name := range []string{"a", "b", "c"} {
		mk(name, "")
		// One at a time: each takes the lowest free range before the next node comes.
		controllertest.Until(t, "node "+name+" given a range", 15*time.Second, func() bool {
			n, err := nodes.Get(ctx, name, metav1.GetOptions{})
			return err == nil && n.Spec.PodCIDR != ""
		})
	}
	mk("d", "")
	want := map[string]string{"own": "10.50.0.64/26", "a": "10.50.0.0/26", "b": "10.50.0.128/26", "c": "10.50.0.192/26", "d": ""}
	for name, cidr := range want {
		controllertest.Eventually(t, "node "+name+"'s podCIDR and podCIDRs", 15*time.Second, func() string {
			n, err := nodes.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			return strings.TrimSpace(n.Spec.PodCIDR + " " + strings.Join(n.Spec.PodCIDRs, ","))
		}, strings.TrimSpace(cidr+" "+cidr))
	}
	// The node left without a range is told so, from kube's range allocator's source
	// (pkg/controller/nodeipam/ipam/range_allocator.go: "cidrAllocator").
	notAvailable := regexp.MustCompile(`(?m)^\s+Normal\s+CIDRNotAvailable\s+.*\scidrAllocator\s+Node d status is now: CIDRNotAvailable$`)
	controllertest.WaitFor(t, "kubectl describe node d to show the CIDRNotAvailable Event", 30*time.Second, func() (bool, string) {
		out, _ := cl.Kubectl(t, "", "describe", "node", "d")
		return notAvailable.MatchString(out), out
	})
	// Deleting a node frees its range: the node that was waiting gets it.
	if err := nodes.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "waiting node d to get the freed range", 30*time.Second, func() string {
		n, err := nodes.Get(ctx, "d", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return n.Spec.PodCIDR
	}, "10.50.0.0/26")
}
