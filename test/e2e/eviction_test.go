package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// memoryPod is a busybox pod holding holdMi MiB of its own memory (awk keeps 1 MiB
// strings), with the given requests and limits (memory and cpu, "" for none).
func memoryPod(name string, holdMi int, request, limit string) string {
	resources := "{}"
	switch {
	case request != "" && limit != "":
		resources = fmt.Sprintf("{requests: {memory: %s, cpu: 50m}, limits: {memory: %s, cpu: 50m}}", request, limit)
	case request != "":
		resources = fmt.Sprintf("{requests: {memory: %s}}", request)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: memory}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [awk, 'BEGIN { c = sprintf("%%1048576s", ""); for (n = 0; n < %d; n++) a[n] = c n; print "holding"; system("sleep 3600") }']
    resources: %s
`, name, holdMi, resources)
}

// TestNodePressureEviction: a 1Gi lab node with memory.available<384Mi. A BestEffort pod
// holds 120Mi and a Burstable one 100Mi over its 16Mi request; then a Guaranteed pod,
// within its own 600Mi, pushes the node past the threshold. The node gets MemoryPressure
// and its NoSchedule taint (a new pod stays Pending), and minilet evicts in the kubelet's
// order, one pod per look: the BestEffort pod, then the Burstable one; the Guaranteed pod
// runs on. Evicted pods fail with reason Evicted and the kubelet's message.
func TestNodePressureEviction(t *testing.T) {
	l := upLabWith(t, "e2e-evict", cluster.Options{Nodes: 1, NodeMemory: "1Gi", EvictionHard: "memory.available<384Mi"})
	ctx := context.Background()
	applyYAML(t, l, memoryPod("besteffort", 120, "", "")+"---\n"+memoryPod("burstable", 100, "16Mi", ""))
	waitFor(t, "the BestEffort and Burstable pods holding their memory", 2*time.Minute, func() (bool, string) {
		be, _ := cluster.Kubectl(ctx, l, "logs", "besteffort")
		b, _ := cluster.Kubectl(ctx, l, "logs", "burstable")
		return strings.Contains(be, "holding") && strings.Contains(b, "holding"), be + b
	})
	applyYAML(t, l, memoryPod("guaranteed", 560, "600Mi", "600Mi"))

	waitFor(t, "the node's memory-pressure taint", 2*time.Minute, func() (bool, string) {
		out, _ := cluster.Kubectl(ctx, l, "get", "node", "node-1", "-o", "jsonpath={.spec.taints[*].key} {.status.conditions[?(@.type==\"MemoryPressure\")].status}")
		return strings.Contains(out, "node.kubernetes.io/memory-pressure") && strings.HasSuffix(out, "True"), out
	})
	applyYAML(t, l, "apiVersion: v1\nkind: Pod\nmetadata: {name: latecomer}\nspec:\n  containers: [{name: app, image: localhost/minik8s/busybox:v1, command: [sleep, '3600']}]\n")

	phase := func(name string) corev1.PodStatus {
		var p corev1.Pod
		if out, err := cluster.Kubectl(ctx, l, "get", "pod", name, "-o", "json"); err == nil {
			_ = json.Unmarshal([]byte(out), &p)
		}
		return p.Status
	}
	waitFor(t, "both pods over their requests evicted", 3*time.Minute, func() (bool, string) {
		be, b := phase("besteffort"), phase("burstable")
		return be.Reason == "Evicted" && b.Reason == "Evicted", fmt.Sprintf("besteffort %s/%s, burstable %s/%s", be.Phase, be.Reason, b.Phase, b.Reason)
	})
	for _, name := range []string{"besteffort", "burstable"} {
		st := phase(name)
		if st.Phase != corev1.PodFailed || !strings.HasPrefix(st.Message, "The node was low on resource: memory. Threshold quantity: 384Mi, available: ") ||
			!strings.Contains(st.Message, "Container app was using") {
			t.Errorf("%s: phase %s, message %q", name, st.Phase, st.Message)
		}
		var disruption bool
		for _, c := range st.Conditions {
			disruption = disruption || c.Type == corev1.DisruptionTarget && c.Reason == corev1.PodReasonTerminationByKubelet
		}
		if !disruption {
			t.Errorf("%s has no DisruptionTarget condition: %+v", name, st.Conditions)
		}
	}
	// One at a time, BestEffort first: the Events' order.
	events := mustKubectl(t, l, "get", "events", "--field-selector", "reason=Evicted", "--sort-by", ".lastTimestamp", "-o", "jsonpath={range .items[*]}{.involvedObject.name} {end}")
	if strings.TrimSpace(events) != "besteffort burstable" {
		t.Errorf("Evicted events for %q, want besteffort then burstable", events)
	}
	if st := phase("guaranteed"); st.Phase != corev1.PodRunning {
		t.Errorf("the Guaranteed pod within its request: %s %s %s", st.Phase, st.Reason, st.Message)
	}
	if st := phase("latecomer"); st.Phase != corev1.PodPending {
		t.Errorf("a pod created under memory pressure: %s on the tainted node", st.Phase)
	}
	out := mustKubectl(t, l, "get", "events", "--field-selector", "reason=FailedScheduling,involvedObject.name=latecomer", "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(out, "untolerated taint {node.kubernetes.io/memory-pressure: }") {
		t.Errorf("latecomer's FailedScheduling: %q", out)
	}
}
