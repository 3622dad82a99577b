package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

const volumePods = `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {MODE: fast, app.conf: "version=1"}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret}
stringData: {password: s3cret}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: lab-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  hostPath: {path: /tmp/minik8s-e2e-pv-%[1]s, type: DirectoryOrCreate}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: lab-claim}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: vols, labels: {app: shop, tier: web}}
spec:
  initContainers:
  - name: seed
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, "echo seeded-by-init > /work/seed"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, "echo from-app > /work/app; echo claimed > /claim/file; sleep 3600"]
    envFrom: [{configMapRef: {name: app-config}, prefix: CFG_}]
    env:
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: app-secret, key: password}}}
    volumeMounts:
    - {name: work, mountPath: /work}
    - {name: config, mountPath: /etc/app}
    - {name: secret, mountPath: /etc/secret}
    - {name: podinfo, mountPath: /etc/podinfo}
    - {name: claim, mountPath: /claim}
  - name: reader
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    volumeMounts: [{name: work, mountPath: /shared, readOnly: true}]
  volumes:
  - {name: work, emptyDir: {}}
  - {name: config, configMap: {name: app-config}}
  - {name: secret, secret: {secretName: app-secret, defaultMode: 0400}}
  - name: podinfo
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  - {name: claim, persistentVolumeClaim: {claimName: lab-claim}}
---
apiVersion: v1
kind: Pod
metadata: {name: nocm}
spec:
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    volumeMounts: [{name: config, mountPath: /etc/app}]
  volumes:
  - {name: config, configMap: {name: does-not-exist}}
---
apiVersion: v1
kind: Pod
metadata: {name: subpathexpr}
spec:
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, "echo in-subpath > /subpath/file; sleep 3600"]
    env:
    - {name: POD_NAME, value: foo}
    - name: ANNOTATION
      valueFrom: {fieldRef: {fieldPath: "metadata.annotations['mysubpath']"}}
    volumeMounts:
    - {name: work, mountPath: /subpath, subPathExpr: "$(ANNOTATION)/$(POD_NAME)"}
    - {name: work, mountPath: /work}
  volumes:
  - {name: work, emptyDir: {}}
`

// TestVolumes: an init container's file in an emptyDir is seen by the app, which shares
// the emptyDir with a second container; env from a ConfigMap and a Secret; a ConfigMap,
// a Secret (mode 0400) and the pod's labels as files; an update of the ConfigMap reaches
// the running container; a claim bound to a hostPath PV is mounted; a missing ConfigMap
// keeps a pod ContainerCreating with a FailedMount event; a subPathExpr reading an
// annotation not yet set keeps a pod in CreateContainerConfigError until it is set.
func TestVolumes(t *testing.T) {
	l := upLab(t, "e2e-vol", 1)
	suffix := fmt.Sprint(time.Now().UnixNano())
	t.Cleanup(func() { os.RemoveAll("/tmp/minik8s-e2e-pv-" + suffix) })
	applyYAML(t, l, fmt.Sprintf(volumePods, suffix))
	waitFor(t, "the vols pod Running", 90*time.Second, func() (bool, string) {
		out := mustKubectl(t, l, "get", "pod", "vols", "-o", "jsonpath={.status.phase}")
		return out == "Running", out
	})
	exec := func(container string, cmd ...string) string {
		return strings.TrimSpace(mustKubectl(t, l, append([]string{"exec", "vols", "-c", container, "--"}, cmd...)...))
	}
	for _, check := range []struct {
		container string
		cmd       []string
		want      string
	}{
		{"app", []string{"cat", "/work/seed"}, "seeded-by-init"},
		{"reader", []string{"cat", "/shared/seed", "/shared/app"}, "seeded-by-init\nfrom-app"},
		{"app", []string{"sh", "-c", "echo $CFG_MODE $PASSWORD"}, "fast s3cret"},
		{"app", []string{"cat", "/etc/app/app.conf"}, "version=1"},
		{"app", []string{"cat", "/etc/secret/password"}, "s3cret"},
		{"app", []string{"stat", "-L", "-c", "%a", "/etc/secret/password"}, "400"},
		{"app", []string{"cat", "/etc/podinfo/labels"}, "app=\"shop\"\ntier=\"web\""},
		{"app", []string{"cat", "/claim/file"}, "claimed"},
		{"reader", []string{"sh", "-c", "touch /shared/x 2>&1 || true"}, "touch: /shared/x: Read-only file system"},
	} {
		var got string
		waitFor(t, fmt.Sprintf("%s: %v", check.container, check.cmd), 20*time.Second, func() (bool, string) {
			got = exec(check.container, check.cmd...)
			return got == check.want, got
		})
	}

	// An updated ConfigMap reaches the mounted file of the running container at the pod's
	// next periodic sync, 60 to 90 s after its last one (the kubelet's resync).
	mustKubectl(t, l, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"app.conf":"version=2"}}`)
	start := time.Now()
	waitFor(t, "the updated ConfigMap in the container", 120*time.Second, func() (bool, string) {
		got := exec("app", "cat", "/etc/app/app.conf")
		return got == "version=2", got
	})
	t.Logf("ConfigMap update visible in the container after %s", time.Since(start).Round(time.Second))

	waitFor(t, "a FailedMount event for the missing ConfigMap", 60*time.Second, func() (bool, string) {
		out := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=nocm")
		return strings.Contains(out, `MountVolume.SetUp failed for volume "config" : configmap "does-not-exist" not found`), out
	})
	if out := mustKubectl(t, l, "get", "pod", "nocm", "--no-headers"); !strings.Contains(out, "ContainerCreating") {
		t.Errorf("pod with a missing ConfigMap: %s, want ContainerCreating", out)
	}

	waitFor(t, "a Failed event for the subPathExpr missing its annotation", 60*time.Second, func() (bool, string) {
		out := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=subpathexpr")
		return strings.Contains(out, "Error: missing value for ANNOTATION"), out
	})
	if out := mustKubectl(t, l, "get", "pod", "subpathexpr", "--no-headers"); !strings.Contains(out, "CreateContainerConfigError") {
		t.Errorf("pod with a subPathExpr missing a value: %s, want CreateContainerConfigError", out)
	}
	mustKubectl(t, l, "annotate", "pod", "subpathexpr", "mysubpath=mypath")
	waitFor(t, "the subPathExpr pod writing into mypath/foo", 60*time.Second, func() (bool, string) {
		out, _ := cluster.Kubectl(context.Background(), l, "exec", "subpathexpr", "--", "cat", "/work/mypath/foo/file")
		return strings.TrimSpace(out) == "in-subpath", out
	})
	mustKubectl(t, l, "delete", "pod", "vols", "--wait=true")
}
