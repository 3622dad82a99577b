package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// Pods that burn CPU (far above half of their 100m request) until /tmp/stop exists.
const hpaWorkload = `apiVersion: apps/v1
kind: Deployment
metadata: {name: burner}
spec:
  replicas: 1
  selector: {matchLabels: {app: burner}}
  template:
    metadata: {labels: {app: burner}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: burn
        image: localhost/minik8s/busybox:v1
        command: [sh, -c, 'while [ ! -f /tmp/stop ]; do :; done; exec sleep 3600']
        resources: {requests: {cpu: 100m}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: burner}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burner}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 0}
`

// TestHorizontalPodAutoscaler: an autoscaler reads its pods' CPU from miniapi's
// metrics.k8s.io (measured by minilet), scales the Deployment up to maxReplicas while the
// pods burn CPU, and back down to minReplicas once they idle, with Kubernetes' Events.
func TestHorizontalPodAutoscaler(t *testing.T) {
	l := upLab(t, "hpa", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	applyYAML(t, l, hpaWorkload)

	replicas := func() string {
		out, _ := cluster.Kubectl(ctx, l, "get", "deploy", "burner", "-o", "jsonpath={.spec.replicas}")
		return strings.TrimSpace(out)
	}
	waitFor(t, "the autoscaler to scale the burners up to 3", 3*time.Minute, func() (bool, string) {
		out, _ := cluster.Kubectl(ctx, l, "get", "hpa", "burner")
		return replicas() == "3", out
	})
	events := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale")
	if !strings.Contains(events, "cpu resource utilization (percentage of request) above target") {
		t.Errorf("rescale events:\n%s", events)
	}
	// The TARGETS column shows a measured utilization, far above the 50% target.
	out := mustKubectl(t, l, "get", "hpa", "burner", "--no-headers")
	if f := strings.Fields(out); len(f) < 4 || f[2] != "cpu:" || strings.HasPrefix(f[3], "<unknown>") || !strings.HasSuffix(f[3], "%/50%") {
		t.Errorf("kubectl get hpa: %q", out)
	}

	// Idle: down to one replica (no stabilization window in this autoscaler's behavior).
	waitFor(t, "every burner running", 2*time.Minute, func() (bool, string) {
		out, _ := cluster.Kubectl(ctx, l, "get", "pods", "-l", "app=burner", "--no-headers")
		return strings.Count(out, "Running") == 3, out
	})
	pods := strings.Fields(mustKubectl(t, l, "get", "pods", "-l", "app=burner", "-o", "jsonpath={.items[*].metadata.name}"))
	for _, p := range pods {
		mustKubectl(t, l, "exec", p, "--", "touch", "/tmp/stop")
	}
	waitFor(t, "the autoscaler to scale the idle burners down to 1", 3*time.Minute, func() (bool, string) {
		out, _ := cluster.Kubectl(ctx, l, "get", "hpa", "burner")
		return replicas() == "1", out
	})
	if d := mustKubectl(t, l, "describe", "hpa", "burner"); !strings.Contains(d, "All metrics below target") ||
		!strings.Contains(d, "ValidMetricFound") {
		t.Errorf("kubectl describe hpa:\n%s", d)
	}
}
