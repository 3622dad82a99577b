package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const volumeLifecyclePods = `apiVersion: v1
kind: ConfigMap
metadata: {name: soon-gone}
data: {k: v1}
---
apiVersion: v1
kind: Pod
metadata: {name: eph}
spec:
  securityContext: {runAsUser: 1000, fsGroup: 3000}
  containers:
  - name: c
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, "echo hi > /data/x && echo hi > /logs/x && sleep 3600"]
    volumeMounts:
    - {name: scratch, mountPath: /data}
    - {name: tmp, mountPath: /logs, subPath: app/logs}
  volumes:
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        metadata: {labels: {type: scratch}}
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  - {name: tmp, emptyDir: {}}
---
apiVersion: v1
kind: Pod
metadata: {name: notype}
spec:
  containers:
  - {name: c, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"], volumeMounts: [{name: v, mountPath: /v}]}
  volumes: [{name: v, hostPath: {path: /tmp/minik8s-e2e-notype-%[1]s}}]
---
apiVersion: v1
kind: Pod
metadata: {name: keeps}
spec:
  containers:
  - {name: c, image: localhost/minik8s/busybox:v1, command: [sh, -c, "cat /v/k; sleep 5; exit 1"], volumeMounts: [{name: v, mountPath: /v}]}
  volumes: [{name: v, configMap: {name: soon-gone}}]
`

// TestVolumeLifecycle: a generic ephemeral volume gets its claim POD-VOLUME, owned by the
// pod, provisioned, mounted and deleted with the pod; a subPath made in an emptyDir is
// writable by a container that is not root; a hostPath of no type that is missing is
// made, so the pod runs; a pod whose ConfigMap is deleted keeps its files and its
// container is restarted, with FailedMount events.
func TestVolumeLifecycle(t *testing.T) {
	l := upLab(t, "e2e-vlc", 1)
	suffix := fmt.Sprint(time.Now().UnixNano())
	t.Cleanup(func() { os.RemoveAll("/tmp/minik8s-e2e-notype-" + suffix) })
	applyYAML(t, l, fmt.Sprintf(volumeLifecyclePods, suffix))
	for _, pod := range []string{"eph", "notype", "keeps"} {
		waitFor(t, pod+" Running", 120*time.Second, func() (bool, string) {
			out := mustKubectl(t, l, "get", "pod", pod, "-o", "jsonpath={.status.phase}")
			return out == "Running", out
		})
	}
	owner := mustKubectl(t, l, "get", "pvc", "eph-scratch", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.metadata.labels.type} {.status.phase}")
	if owner != "Pod/eph scratch Bound" {
		t.Errorf("claim eph-scratch: %q, want owned by Pod/eph, labelled, Bound", owner)
	}
	waitFor(t, "eph writing in its volumes", 30*time.Second, func() (bool, string) {
		out := mustKubectl(t, l, "exec", "eph", "--", "cat", "/data/x", "/logs/x")
		return out == "hi\nhi\n", out
	})

	mustKubectl(t, l, "delete", "configmap", "soon-gone")
	waitFor(t, "keeps restarted with its ConfigMap's file", 90*time.Second, func() (bool, string) {
		restarts := mustKubectl(t, l, "get", "pod", "keeps", "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
		logs := mustKubectl(t, l, "logs", "keeps")
		return restarts >= "2" && logs == "v1", restarts + " " + logs
	})
	waitFor(t, "a FailedMount event for the deleted ConfigMap", 60*time.Second, func() (bool, string) {
		out := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=keeps")
		return strings.Contains(out, `MountVolume.SetUp failed for volume "v" : configmap "soon-gone" not found`), out
	})

	mustKubectl(t, l, "delete", "pod", "eph", "--wait=true")
	waitFor(t, "the ephemeral claim gone with its pod", 60*time.Second, func() (bool, string) {
		out := mustKubectl(t, l, "get", "pvc", "-o", "name")
		return out == "", out
	})
}
