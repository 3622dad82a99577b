package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

const resourcePods = `apiVersion: v1
kind: Pod
metadata: {name: guaranteed}
spec:
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    resources: {limits: {cpu: 500m, memory: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  containers:
  - name: hog
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'x=aaaaaaaaaaaaaaaa; while true; do x=$x$x; done']
    resources: {requests: {memory: 16Mi}, limits: {memory: 32Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: secure}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000], fsGroup: 2000, seccompProfile: {type: RuntimeDefault}}
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
    securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Pod
metadata: {name: nonroot}
spec:
  securityContext: {runAsNonRoot: true}
  containers: [{name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: besteffort}
spec:
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
`

// TestResources: a Guaranteed pod's container cgroup carries its CPU quota and memory
// limit and the pod reports its QoS class; a container over its memory limit is
// OOMKilled (137) and restarted.
func TestResources(t *testing.T) {
	l := upLab(t, "e2e-res", 1)
	applyYAML(t, l, resourcePods)
	waitFor(t, "the guaranteed pod Running", 60*time.Second, func() (bool, string) {
		p := getPod(t, l, "guaranteed")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	for name, want := range map[string]corev1.PodQOSClass{"guaranteed": corev1.PodQOSGuaranteed, "hog": corev1.PodQOSBurstable, "besteffort": corev1.PodQOSBestEffort} {
		if got := getPod(t, l, name).Status.QOSClass; got != want {
			t.Errorf("qosClass of %s = %q, want %q", name, got, want)
		}
	}
	p := getPod(t, l, "guaranteed")
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	dir := filepath.Join(cluster.CgroupRoot(l.Nodes[0]), "kubepods", "pod"+string(p.UID), id)
	memory, cpu := cgroupLimits(t, dir)
	if memory != "67108864" || cpu != "50000 100000" {
		t.Errorf("cgroup %s: memory limit %q, cpu quota/period %q; want 67108864 and 50000 100000", dir, memory, cpu)
	}
	podDir := filepath.Dir(dir) // the pod's own cgroup is bounded by the sum of its containers'
	if memory, cpu := cgroupLimits(t, podDir); memory != "67108864" || cpu != "50000 100000" {
		t.Errorf("pod cgroup %s: memory limit %q, cpu quota/period %q; want 67108864 and 50000 100000", podDir, memory, cpu)
	}

	// securityContext: user and groups (fsGroup among them, owning the emptyDir), a
	// read-only root, no capabilities, seccomp; a root image under runAsNonRoot is refused
	// as the kubelet refuses it.
	waitFor(t, "the secure pod Running", 60*time.Second, func() (bool, string) {
		p := getPod(t, l, "secure")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	if out := strings.Fields(mustKubectl(t, l, "exec", "secure", "--", "sh", "-c", "id -u; id -g; id -G | tr ' ' '\\n' | sort | tr '\\n' ,")); strings.Join(out, " ") != "1000 3000 2000,3000,4000," {
		t.Errorf("uid, gid and groups in the secure pod: %q, want 1000 3000 2000,3000,4000,", out)
	}
	if out := strings.TrimSpace(mustKubectl(t, l, "exec", "secure", "--", "sh", "-c", "touch /data/f && stat -c %g /data/f")); out != "2000" {
		t.Errorf("a file made in the fsGroup's emptyDir has group %q, want 2000", out)
	}
	if out := strings.TrimSpace(mustKubectl(t, l, "exec", "secure", "--", "grep", "Seccomp:", "/proc/self/status")); !strings.HasSuffix(out, "2") {
		t.Errorf("seccomp RuntimeDefault: %q, want mode 2 (filter)", out)
	}
	if out, _ := cluster.Kubectl(context.Background(), l, "exec", "secure", "--", "touch", "/x"); !strings.Contains(out, "Read-only file system") {
		t.Errorf("touch on a read-only root: %q", out)
	}
	if out := strings.TrimSpace(mustKubectl(t, l, "exec", "secure", "--", "grep", "CapEff", "/proc/self/status")); !strings.HasSuffix(out, "0000000000000000") {
		t.Errorf("capabilities after dropping ALL: %q", out)
	}
	waitFor(t, "the nonroot pod refused", 60*time.Second, func() (bool, string) {
		p := getPod(t, l, "nonroot")
		cs := p.Status.ContainerStatuses
		if len(cs) == 0 || cs[0].State.Waiting == nil {
			return false, fmt.Sprint(cs)
		}
		w := cs[0].State.Waiting
		want := fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: app)", "nonroot_default("+string(p.UID)+")")
		return w.Reason == "CreateContainerConfigError" && w.Message == want, w.Reason + ": " + w.Message
	})

	waitFor(t, "the hog OOMKilled and restarted", 90*time.Second, func() (bool, string) {
		cs := getPod(t, l, "hog").Status.ContainerStatuses
		if len(cs) == 0 || cs[0].LastTerminationState.Terminated == nil {
			return false, fmt.Sprint(cs)
		}
		last := cs[0].LastTerminationState.Terminated
		return cs[0].RestartCount >= 1 && last.Reason == "OOMKilled" && last.ExitCode == 137, fmt.Sprintf("restarts %d last %+v", cs[0].RestartCount, *last)
	})
}

// cgroupLimits reads a container cgroup's memory limit and CPU quota and period from
// cgroup v1 (memory.limit_in_bytes, cpu.cfs_quota_us/cfs_period_us) or v2 (memory.max,
// cpu.max).
func cgroupLimits(t *testing.T, dir string) (memory, cpu string) {
	t.Helper()
	read := func(path string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("cgroup file: %v", err)
		}
		return strings.TrimSpace(string(data))
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return read(filepath.Join("/sys/fs/cgroup", dir, "memory.max")), read(filepath.Join("/sys/fs/cgroup", dir, "cpu.max"))
	}
	return read(filepath.Join("/sys/fs/cgroup/memory", dir, "memory.limit_in_bytes")),
		read(filepath.Join("/sys/fs/cgroup/cpu", dir, "cpu.cfs_quota_us")) + " " + read(filepath.Join("/sys/fs/cgroup/cpu", dir, "cpu.cfs_period_us"))
}
