package core_test

import (
	"context"
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodIPsFollowPodIP: a status write's podIP and podIPs come out as kube's round trip
// through its internal PodStatus makes them: podIPs takes podIP when only podIP is sent,
// podIP wins when both are sent and differ, and podIP is podIPs[0] when only podIPs is.
func TestPodIPsFollowPodIP(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, pods := context.Background(), c.Client.CoreV1().Pods(c.Namespace)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ips"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		patch  string
		podIP  string
		podIPs []string
	}{
		{`{"status":{"podIP":"192.0.2.10"}}`, "192.0.2.10", []string{"192.0.2.10"}},
		{`{"status":{"podIP":"192.0.2.11","podIPs":[{"ip":"192.0.2.12"},{"ip":"2001:db8::1"}]}}`, "192.0.2.11", []string{"192.0.2.11"}},
		{`{"status":{"podIP":null,"podIPs":[{"ip":"192.0.2.13"},{"ip":"2001:db8::2"}]}}`, "192.0.2.13", []string{"192.0.2.13", "2001:db8::2"}},
	} {
		got, err := pods.Patch(ctx, "ips", types.MergePatchType, []byte(c.patch), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatalf("%s: %v", c.patch, err)
		}
		var ips []string
		for _, ip := range got.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		if got.Status.PodIP != c.podIP || !slices.Equal(ips, c.podIPs) {
			t.Errorf("%s: podIP %q, podIPs %v; want %q, %v", c.patch, got.Status.PodIP, ips, c.podIP, c.podIPs)
		}
	}
}
