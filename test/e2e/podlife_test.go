package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
---
apiVersion: v1
kind: Pod
metadata: {name: once}
spec:
  restartPolicy: OnFailure
  containers:
  - {name: done, image: localhost/minik8s/busybox:v1, command: [echo, finished]}
  - {name: work, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: userns}
spec:
  hostUsers: false
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
`

// TestPodLifeAsTheKubelet: a deleted pod's readiness is still probed while it stops (its
// preStop hook removes what the probe reads: Ready turns False before the pod is gone), as
// the kubelet's; its status lists its volume mounts and the user its process runs as; a Memory emptyDir is a tmpfs of the
// kubelet's options (size, no nosuid/nodev); a sidecar failing its startup probe is killed
// with the kubelet's "Init container proxy failed startup probe"; a pod whose pause
// container died starts over in a new sandbox without running again its container that
// succeeded under restartPolicy OnFailure (whose log stays readable); a pod asking for a
// user namespace gets no sandbox, with the kubelet's FailedCreatePodSandBox event.
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

	const noUserns = "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	waitFor(t, "the pod in a user namespace refused", 60*time.Second, func() (bool, string) {
		events, _ := cluster.Kubectl(ctx, l, "get", "events", "--field-selector", "involvedObject.name=userns,reason=FailedCreatePodSandBox", "-o", "jsonpath={.items[*].message}")
		return strings.Contains(events, noUserns), events
	})
	if p := podNow(l, "userns"); p.Status.Phase != corev1.PodPending {
		t.Errorf("the pod in a user namespace is %s, want Pending", p.Status.Phase)
	}

	containerStatus := func(p corev1.Pod, name string) corev1.ContainerStatus {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == name {
				return cs
			}
		}
		return corev1.ContainerStatus{}
	}
	waitFor(t, "once's done succeeded and its work running", 90*time.Second, func() (bool, string) {
		p := podNow(l, "once")
		done, work := containerStatus(p, "done"), containerStatus(p, "work")
		return done.State.Terminated != nil && done.State.Terminated.ExitCode == 0 && work.State.Running != nil, fmt.Sprintf("%+v", p.Status.ContainerStatuses)
	})
	killPause(t, string(podNow(l, "once").UID))
	waitFor(t, "once's work restarted in a new sandbox", 90*time.Second, func() (bool, string) {
		p := podNow(l, "once")
		work := containerStatus(p, "work")
		return work.RestartCount == 1 && work.State.Running != nil, fmt.Sprintf("%+v", p.Status.ContainerStatuses)
	})
	p := podNow(l, "once")
	if done := containerStatus(p, "done"); done.RestartCount != 0 || done.State.Terminated == nil || done.State.Terminated.ExitCode != 0 {
		t.Errorf("done after a new sandbox: restarts %d, state %+v; want still terminated with 0", done.RestartCount, done.State)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("once after a new sandbox is %s, want Running", p.Status.Phase)
	}
	if out := mustKubectl(t, l, "logs", "once", "-c", "done"); strings.TrimSpace(out) != "finished" {
		t.Errorf("log of done after a new sandbox %q, want finished", out)
	}
}

// killPause SIGKILLs the pause process of the pod with uid, found by its pod cgroup.
func killPause(t *testing.T, uid string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "pause" {
			continue
		}
		cgroup, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !strings.Contains(string(cgroup), "pod"+uid) {
			continue
		}
		pid, _ := strconv.Atoi(e.Name())
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the pause process of pod %s: %v", uid, err)
		}
		return
	}
	t.Fatalf("no pause process in the cgroup of pod %s", uid)
}
