package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
	corev1 "k8s.io/api/core/v1"
)

const schedulerManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 3
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: spread}}
            topologyKey: kubernetes.io/hostname
      containers:
      - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec:
  schedulerName: other
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-high}
value: 1000
`

// TestScheduler: a Deployment whose pods are anti-affine to each other on hostname puts
// one pod on each of the two nodes and leaves the third Pending with Kubernetes' event; a
// pod for another scheduler stays Pending untouched; a high-priority pod preempts a
// low-priority one from a full node and runs there.
func TestScheduler(t *testing.T) {
	l := upLab(t, "e2e-sched", 2)
	ctx := context.Background()
	applyYAML(t, l, schedulerManifest)
	waitRunningOn(t, l, "spread", "node-1,node-2", 120*time.Second)

	pending := ""
	for _, p := range appPods(t, l, "spread") {
		if p.Spec.NodeName == "" {
			pending = p.Name
		}
	}
	if pending == "" {
		t.Fatal("no spread pod is pending")
	}
	want := "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
	waitFor(t, "the pending pod's FailedScheduling event", 30*time.Second, func() (bool, string) {
		out, _ := cluster.Kubectl(ctx, l, "get", "events", "--field-selector", "reason=FailedScheduling,involvedObject.name="+pending, "-o", "jsonpath={.items[*].message}")
		return strings.Contains(out, want), out
	})
	if out := mustKubectl(t, l, "describe", "pod", pending); !strings.Contains(out, "FailedScheduling") || !strings.Contains(out, "default-scheduler") {
		t.Errorf("kubectl describe of the pending pod:\n%s", out)
	}

	// Preemption: fill node-1's CPU with a low-priority pod, then ask for the same room.
	var node corev1.Node
	kubectlJSON(t, l, &node, "get", "node", "node-1")
	room := node.Status.Allocatable.Cpu().MilliValue() * 7 / 10
	pod := func(name, class string, priority int) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: %s}}
spec:
  priorityClassName: %s
  priority: %d
  nodeSelector: {kubernetes.io/hostname: node-1}
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    resources: {requests: {cpu: %dm}}
`, name, name, class, priority, room)
	}
	applyYAML(t, l, pod("low", "e2e-low", 10))
	waitRunningOn(t, l, "low", "node-1", 90*time.Second)
	applyYAML(t, l, pod("high", "e2e-high", 1000))
	waitRunningOn(t, l, "high", "node-1", 120*time.Second)
	if out, err := cluster.Kubectl(ctx, l, "get", "pod", "low"); err == nil {
		t.Errorf("the preempted pod is still there:\n%s", out)
	}
	out, _ := cluster.Kubectl(ctx, l, "get", "events", "--field-selector", "reason=Preempted,involvedObject.name=low", "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(out, "Preempted by pod") || !strings.Contains(out, "on node node-1") {
		t.Errorf("Preempted event of the victim: %q", out)
	}

	// The other scheduler's pod: no node, no condition, no event from us.
	var others corev1.PodList
	kubectlJSON(t, l, &others, "get", "pods", "-l", "!app")
	for _, x := range others.Items {
		if x.Name == "elsewhere" && (x.Spec.NodeName != "" || len(x.Status.Conditions) != 0) {
			t.Errorf("schedulerName=other was touched: node %q conditions %v", x.Spec.NodeName, x.Status.Conditions)
		}
	}
	if out, _ := cluster.Kubectl(ctx, l, "get", "events", "--field-selector", "involvedObject.name=elsewhere", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("events about the other scheduler's pod: %s", out)
	}
	if out := mustKubectl(t, l, "get", "pod", "elsewhere", "--no-headers"); !strings.Contains(out, "Pending") {
		t.Errorf("elsewhere: %s", out)
	}
}
