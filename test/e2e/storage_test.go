package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

const storageApp = `apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 8080}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      securityContext: {runAsUser: 1000}
      containers:
      - name: c
        image: localhost/minik8s/busybox:v1
        command: [sh, -c, 'echo "started $(hostname)" >> /data/log; exec sleep 3600']
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// TestDynamicProvisioning: on a fresh lab, a StatefulSet's claims without a class get the
// default class's node-local volumes (provisioned where the scheduler put each pod,
// writable by a non-root user), its data outlives its pod, a claim deleted under a
// running pod waits for the pod (pvc-protection), and then the volume and its directory
// on the node go.
func TestDynamicProvisioning(t *testing.T) {
	l := upLab(t, "e2e-stor", 2)
	applyYAML(t, l, storageApp)
	mustKubectl(t, l, "rollout", "status", "statefulset/db", "--timeout=120s")
	for _, claim := range []string{"data-db-0", "data-db-1"} {
		out := mustKubectl(t, l, "get", "pvc", claim, "-o", "jsonpath={.spec.storageClassName} {.status.phase} {.metadata.annotations.volume\\.kubernetes\\.io/selected-node}")
		if f := strings.Fields(out); len(f) != 3 || f[0] != "standard" || f[1] != "Bound" {
			t.Fatalf("claim %s: class, phase, node = %q", claim, out)
		}
	}
	// Each volume is pinned to the node its pod runs on.
	for _, pod := range []string{"db-0", "db-1"} {
		node := mustKubectl(t, l, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}")
		pv := mustKubectl(t, l, "get", "pvc", "data-"+pod, "-o", "jsonpath={.spec.volumeName}")
		pinned := mustKubectl(t, l, "get", "pv", pv, "-o", "jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}")
		if pinned != node {
			t.Fatalf("%s runs on %s, its volume %s is pinned to %q", pod, node, pv, pinned)
		}
	}
	if out := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=data-db-0,reason=ProvisioningSucceeded"); !strings.Contains(out, "Successfully provisioned volume pvc-") {
		t.Fatalf("no ProvisioningSucceeded event: %s", out)
	}
	// As sig-storage-lib-external-provisioner tells of the start of a provisioning.
	if out := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=data-db-0,reason=Provisioning"); !strings.Contains(out, `External provisioner is provisioning volume for claim "default/data-db-0"`) {
		t.Fatalf("no Provisioning event: %s", out)
	}

	// The data outlives the pod: the StatefulSet's new db-0 sees what the old one wrote.
	mustKubectl(t, l, "delete", "pod", "db-0")
	waitFor(t, "db-0 back with its data", 90*time.Second, func() (bool, string) {
		out, _ := cluster.Kubectl(context.Background(), l, "exec", "db-0", "--", "cat", "/data/log")
		return strings.Count(out, "started db-0") == 2, out
	})

	// A claim deleted under its running pod stays until the pod is gone.
	pv := mustKubectl(t, l, "get", "pvc", "data-db-1", "-o", "jsonpath={.spec.volumeName}")
	dir := mustKubectl(t, l, "get", "pv", pv, "-o", "jsonpath={.spec.hostPath.path}")
	if _, err := os.Stat(dir); err != nil || !strings.HasPrefix(dir, filepath.Join(l.StateDir, "storage")) {
		t.Fatalf("volume directory %q (under the lab's state directory %s): %v", dir, l.StateDir, err)
	}
	mustKubectl(t, l, "delete", "pvc", "data-db-1", "--wait=false")
	time.Sleep(3 * time.Second)
	if out := mustKubectl(t, l, "get", "pvc", "data-db-1", "-o", "jsonpath={.metadata.deletionTimestamp} {.metadata.finalizers}"); !strings.Contains(out, "kubernetes.io/pvc-protection") {
		t.Fatalf("a claim in use went: %q", out)
	}
	mustKubectl(t, l, "scale", "statefulset/db", "--replicas=1")
	waitFor(t, "the claim, its volume and the volume's directory gone", 90*time.Second, func() (bool, string) {
		claims, _ := cluster.Kubectl(context.Background(), l, "get", "pvc", "-o", "name")
		volumes, _ := cluster.Kubectl(context.Background(), l, "get", "pv", "-o", "name")
		_, err := os.Stat(dir)
		return !strings.Contains(claims, "data-db-1") && !strings.Contains(volumes, pv) && os.IsNotExist(err),
			"claims: " + claims + " volumes: " + volumes
	})
	// The provisioner's helper pods are gone too.
	if out := mustKubectl(t, l, "-n", "kube-system", "get", "pods", "-l", "app.kubernetes.io/managed-by=local-path-provisioner", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Fatalf("helper pods left: %s", out)
	}
}
