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

// TestEphemeralStorageEviction: a pod writing past its containers' ephemeral-storage limits and a
// pod filling an emptyDir past its sizeLimit are evicted, with the kubelet's messages; a
// pod within its limits stays. minilet walks disk usage every minute, so each goes within
// about a minute of writing.
func TestEphemeralStorageEviction(t *testing.T) {
	l := upLab(t, "e2e-eslim", 1)
	applyYAML(t, l, `apiVersion: v1
kind: Pod
metadata: {name: layer-writer}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'dd if=/dev/zero of=/fill bs=1M count=24 && sleep 3600']
    resources: {limits: {ephemeral-storage: 8Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: scratch-writer}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: scratch, emptyDir: {sizeLimit: 8Mi}}]
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'dd if=/dev/zero of=/scratch/fill bs=1M count=24 && sleep 3600']
    volumeMounts: [{name: scratch, mountPath: /scratch}]
---
apiVersion: v1
kind: Pod
metadata: {name: modest}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: scratch, emptyDir: {sizeLimit: 64Mi}}]
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'dd if=/dev/zero of=/scratch/fill bs=1M count=4 && sleep 3600']
    volumeMounts: [{name: scratch, mountPath: /scratch}]
    resources: {limits: {ephemeral-storage: 64Mi}}
`)
	status := func(name string) corev1.PodStatus { return podNow(l, name).Status }
	waitFor(t, "both writers evicted", 3*time.Minute, func() (bool, string) {
		a, b := status("layer-writer"), status("scratch-writer")
		return a.Reason == "Evicted" && b.Reason == "Evicted", fmt.Sprintf("layer-writer %s/%s, scratch-writer %s/%s", a.Phase, a.Reason, b.Phase, b.Reason)
	})
	for name, want := range map[string]string{
		"layer-writer":   "Pod ephemeral local storage usage exceeds the total limit of containers 8Mi. ",
		"scratch-writer": `Usage of EmptyDir volume "scratch" exceeds the limit "8Mi". `,
	} {
		if st := status(name); st.Phase != corev1.PodFailed || st.Message != want {
			t.Errorf("%s: %s %q, want Failed %q", name, st.Phase, st.Message, want)
		}
	}
	events := mustKubectl(t, l, "get", "events", "--field-selector", "reason=Evicted,involvedObject.name=scratch-writer", "-o", "jsonpath={.items[*].type}")
	if events != "Warning" {
		t.Errorf("scratch-writer's Evicted events: %q", events)
	}
	// An evicted pod's exited containers go, and their writable layers with them (the
	// kubelet's HandlePodReconcile): its logs are no more, in the kubelet's words.
	waitFor(t, "layer-writer's container removed", 30*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(context.Background(), l, "logs", "layer-writer")
		return err != nil && strings.Contains(err.Error(), "unable to retrieve container logs for containerd://"), fmt.Sprintf("%q, %v", out, err)
	})
	if st := status("modest"); st.Phase != corev1.PodRunning {
		t.Errorf("the pod within its limits: %s %s %s", st.Phase, st.Reason, st.Message)
	}
}
