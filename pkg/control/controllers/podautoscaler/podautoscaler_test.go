package podautoscaler_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAutoscalerAgainstMiniapi: `kubectl autoscale` (autoscaling/v1 from kubectl 1.32,
// v2 from 1.33) makes an autoscaler that brings the Deployment up to minReplicas at once,
// and with no node to measure the pods, says why it cannot act on CPU in its conditions
// and Events, as kube-controller-manager words them. The scaling on measured CPU is
// tested on a lab cluster (test/e2e/hpa_test.go).
func TestAutoscalerAgainstMiniapi(t *testing.T) {
	c := controlplanetest.Start(t, func(o *controlplane.Options) { o.HPA.SyncPeriod = time.Second })
	ctx := context.Background()
	c.MustKubectl(t, "", "create", "deployment", "web", "--image=localhost/minik8s/netexec:v1", "--replicas=1")
	c.MustKubectl(t, "", "set", "resources", "deployment", "web", "--requests=cpu=100m")
	c.MustKubectl(t, "", "autoscale", "deployment", "web", "--cpu-percent=50", "--min=3", "--max=5")

	controllertest.WaitFor(t, "the Deployment scaled to minReplicas", 30*time.Second, func() (bool, string) {
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return *d.Spec.Replicas == 3, d.String()
	})
	controllertest.WaitFor(t, "the autoscaler to report the missing metrics", 30*time.Second, func() (bool, string) {
		out := c.MustKubectl(t, "", "describe", "hpa", "web")
		return strings.Contains(out, "New size: 3; reason: Current number of replicas below Spec.MinReplicas") &&
			strings.Contains(out, "ScalingActive  False   FailedGetResourceMetric") &&
			strings.Contains(out, "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"), out
	})
	out := c.MustKubectl(t, "", "get", "hpa", "web", "--no-headers")
	if f := strings.Fields(out); len(f) < 7 || f[1] != "Deployment/web" || f[2] != "cpu:" || f[3] != "<unknown>/50%" || f[4] != "3" || f[5] != "5" || f[6] != "3" {
		t.Errorf("kubectl get hpa: %q", out)
	}

	// The same object through both versions: v1 shows the CPU target, v2 the metric.
	v1 := c.MustKubectl(t, "", "get", "--raw", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web")
	if !strings.Contains(v1, `"targetCPUUtilizationPercentage":50`) || !strings.Contains(v1, `"autoscaling.alpha.kubernetes.io/conditions"`) {
		t.Errorf("autoscaling/v1 view: %s", v1)
	}
	if mf := c.MustKubectl(t, "", "get", "hpa", "web", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[0].apiVersion}"); mf != "autoscaling/v1" {
		t.Errorf("kubectl autoscale (1.32) wrote through %q, want autoscaling/v1", mf)
	}
	// kubectl 1.33 writes autoscaling/v2.
	if k133 := besideKubectl(t, "kubectl.1.33"); k133 != "" {
		if out, err := exec.Command(k133, "--kubeconfig", c.Kubeconfig, "autoscale", "deployment", "web", "--name=v2", "--cpu-percent=70", "--min=3", "--max=6").CombinedOutput(); err != nil {
			t.Errorf("kubectl 1.33 autoscale: %v\n%s", err, out)
		}
		if mf := c.MustKubectl(t, "", "get", "hpa", "v2", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[0].apiVersion} {.spec.metrics[0].resource.target.averageUtilization}"); mf != "autoscaling/v2 70" {
			t.Errorf("kubectl 1.33 autoscale wrote %q, want autoscaling/v2 70", mf)
		}
		c.MustKubectl(t, "", "delete", "hpa", "v2")
	}
	// An invalid autoscaler is refused with the field named.
	bad := `{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "bad"},
	  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 4, "maxReplicas": 2}}`
	if out, err := c.Kubectl(t, bad, "create", "-f", "-"); err == nil ||
		!strings.Contains(out, "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`") {
		t.Errorf("max < min accepted: %v\n%s", err, out)
	}

	// Deleting the autoscaler leaves the Deployment as it is.
	c.MustKubectl(t, "", "delete", "hpa", "web")
	time.Sleep(2 * time.Second)
	if d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 3 {
		t.Errorf("deployment after the autoscaler went: %v %v", d.Spec.Replicas, err)
	}
}

// besideKubectl is a kubectl of another version installed beside the default one ("" and a
// log line when it is not: make test installs only a kubectl).
func besideKubectl(t *testing.T, name string) string {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(kubectl)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(real), name)
	if _, err := os.Stat(bin); err != nil {
		t.Logf("%s is not installed beside kubectl: its check is left out", name)
		return ""
	}
	return bin
}
