package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

const podlifePods = `apiVersion: v1
kind: Pod
metadata: {name: draining}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, "touch /tmp/ready; trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1}
    lifecycle:
      preStop: {exec: {command: [sh, -c, "rm /tmp/ready; sleep 20"]}}
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - {name: scratch, emptyDir: {medium: Memory, sizeLimit: 10Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: sidecar-probe}
spec:
  initContainers:
  - name: proxy
    image: localhost/minik8s/busybox:v1
    restartPolicy: Always
    command: [sleep, "3600"]
    startupProbe: {exec: {command: ["false"]}, periodSeconds: 1, failureThreshold: 1}
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
`

// TestPodLifeAsTheKubelet: a deleted pod's readiness is still probed while it stops (its
// preStop hook removes what the probe reads: Ready turns False before the pod is gone), as
// the kubelet's; its status lists its volume mounts and the user its process runs as; a Memory emptyDir is a tmpfs of the
// kubelet's options (size, no nosuid/nodev); a sidecar failing its startup probe is killed
// with the kubelet's "Init container proxy failed startup probe".
func TestPodLifeAsTheKubelet(t *testing.T) {
	l := upLab(t, "e2e-podlife", 1)
	ctx := context.Background()
	applyYAML(t, l, podlifePods)

	waitFor(t, "the draining pod Ready", 90*time.Second, func() (bool, string) {
		p := podNow(l, "draining")
		return podReady(p), fmt.Sprint(p.Status.Conditions)
	})
	id := strings.TrimSpace(mustKubectl(t, l, "exec", "draining", "--", "sh", "-c", `echo "$(id -u) $(id -g) [$(id -G)]"`))
	if u := podNow(l, "draining").Status.ContainerStatuses[0].User; u == nil || u.Linux == nil || fmt.Sprint(u.Linux.UID, u.Linux.GID, u.Linux.SupplementalGroups) != id {
		t.Errorf("user in the status %+v, want what id says in the container: %s", u, id)
	}
	mounts := podNow(l, "draining").Status.ContainerStatuses[0].VolumeMounts
	if len(mounts) != 2 || mounts[0].Name != "scratch" || mounts[0].MountPath != "/scratch" || mounts[0].ReadOnly ||
		!mounts[1].ReadOnly || mounts[1].RecursiveReadOnly == nil || *mounts[1].RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled {
		t.Errorf("volumeMounts in the status %+v, want scratch and the read-only service account token", mounts)
	}
	out := mustKubectl(t, l, "exec", "draining", "--", "grep", " /scratch ", "/proc/mounts")
	if opts := strings.Fields(out); len(opts) < 4 || strings.Contains(opts[3], "nosuid") || strings.Contains(opts[3], "nodev") || !strings.Contains(opts[3], "size=10240k") {
		t.Errorf("the Memory emptyDir is mounted %q, want the kubelet's options (size=10240k, neither nosuid nor nodev)", out)
	}
	mustKubectl(t, l, "delete", "pod", "draining", "--wait=false")
	waitFor(t, "the draining pod not Ready while it stops", 15*time.Second, func() (bool, string) {
		p := podNow(l, "draining")
		if p.Name == "" {
			t.Fatal("the draining pod went before its readiness turned False")
		}
		return !podReady(p), fmt.Sprint(p.Status.Conditions)
	})

	waitFor(t, "the sidecar killed for its startup probe", 60*time.Second, func() (bool, string) {
		events, _ := cluster.Kubectl(ctx, l, "get", "events", "--field-selector", "involvedObject.name=sidecar-probe")
		return strings.Contains(events, "Init container proxy failed startup probe"), events
	})
}
