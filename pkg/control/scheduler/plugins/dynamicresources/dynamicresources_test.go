package dynamicresources

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPodsWithClaimsWait(t *testing.T) {
	snap := schedtest.Snapshot([]*corev1.Node{schedtest.Node("n1", nil)})
	p, _ := New(schedtest.NewHandle(snap))
	pod := schedtest.Pod("p", nil, 0)
	if got := schedtest.Filter(p, snap, pod)["n1"]; got != "" {
		t.Errorf("a pod without claims: %q", got)
	}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}, {Name: "nic", ResourceClaimTemplateName: ptr.To("nic")}}
	want := `prefilter: cannot allocate all claims: resourceclaim "gpu-claim", "from template nic": no DRA driver publishes devices in this cluster`
	if got := schedtest.Filter(p, snap, pod)["n1"]; got != want {
		t.Errorf("a pod with claims: %q, want %q", got, want)
	}
	pod.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "nic", ResourceClaimName: ptr.To("p-nic-x7k2")}}
	if got := schedtest.Filter(p, snap, pod)["n1"]; got != `prefilter: cannot allocate all claims: resourceclaim "gpu-claim", "p-nic-x7k2": no DRA driver publishes devices in this cluster` {
		t.Errorf("a pod whose template claim was made: %q", got)
	}
}
