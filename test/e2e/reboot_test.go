package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/network"
)

const rebootWorkload = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: localhost/minik8s/netexec:v1
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, "date >> /data/boots; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
`

// TestSimulatedReboot: the node loses every process and mount a reboot takes away —
// containerd, its shims, every container, minilet, the pods' netns bind mounts and
// containerd's state under /run — while minilet's --root-dir and containerd's root stay.
// Started again with the same arguments, every pod comes back Running and Ready, each in
// a fresh network namespace.
func TestSimulatedReboot(t *testing.T) {
	l := upLab(t, "e2e-reboot", 1)
	node := l.Nodes[0]
	applyYAML(t, l, rebootWorkload)
	pods := func() []corev1.Pod {
		var list corev1.PodList
		kubectlJSON(t, l, &list, "get", "pods")
		return list.Items
	}
	allReady := func() (bool, string) {
		list := pods()
		var states []string
		ready := len(list) == 4
		for _, p := range list {
			ok := p.Status.Phase == corev1.PodRunning && podReady(p)
			ready = ready && ok
			states = append(states, fmt.Sprintf("%s=%s/ready=%t", p.Name, p.Status.Phase, ok))
		}
		return ready, strings.Join(states, " ")
	}
	waitFor(t, "4 pods Running and Ready", 90*time.Second, allReady)
	sandboxes := map[string]string{} // pod name -> netns file
	for _, p := range pods() {
		sandboxes[p.Name] = filepath.Join(node.RunDir, "netns", string(p.UID))
	}

	// The power goes.
	was := map[string]lab.Process{}
	for _, r := range l.Processes {
		was[r.Name] = lab.Process{Name: r.Name, NetNS: r.NetNS, Args: r.Args, Cgroup: r.Cgroup}
	}
	for _, name := range []string{"minilet-" + node.Name, "containerd"} {
		if err := l.Stop(name, 0); err != nil {
			t.Fatal(err)
		}
	}
	killed := killShims(t, cluster.ContainerdSocket(l)) + killCgroup(t, cluster.CgroupRoot(node))
	t.Logf("killed %d shims and container processes", killed)
	containerdState := filepath.Join(l.RunDir, "containerd", "state")
	t.Logf("unmounted %d mounts", unmountUnder(t, containerdState)+unmountUnder(t, node.RunDir))
	if err := os.RemoveAll(containerdState); err != nil {
		t.Fatal(err)
	}
	for name, path := range sandboxes {
		if _, err := os.Stat(path); err != nil || network.IsNetNS(path) {
			t.Fatalf("netns file of %s after the unmount: %v (nsfs %t), want a plain file left", name, err, network.IsNetNS(path))
		}
	}

	// The node boots: containerd, then minilet, with the arguments they had.
	for _, name := range []string{"containerd", "minilet-" + node.Name} {
		if _, err := l.Start(was[name]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every pod Running and Ready after the reboot", 120*time.Second, func() (bool, string) {
		ready, states := allReady()
		if !ready {
			return false, states
		}
		for _, p := range pods() {
			for _, c := range p.Status.ContainerStatuses {
				if c.RestartCount < 1 {
					return false, fmt.Sprintf("%s/%s has not restarted yet: %s", p.Name, c.Name, states)
				}
			}
		}
		return true, states
	})
	for name, path := range sandboxes {
		if !network.IsNetNS(path) { // (namespace inode numbers are reused: no telling old from new)
			t.Errorf("pod %s runs without its netns mounted at %s", name, path)
		}
	}
	if out := mustKubectl(t, l, "exec", "scratch", "--", "cat", "/data/boots"); strings.Count(out, "\n") != 2 {
		t.Errorf("the emptyDir of scratch after the reboot holds %q, want both boots' lines (it lives on disk)", out)
	}
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unmountUnder unmounts everything mounted below dir (as a reboot would: the pods'
// netns bind mounts and tmpfs volumes, containers' root filesystems), deepest first.
func unmountUnder(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	n := 0
	for _, p := range slices.Compact(points) {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err == nil {
			n++
		}
	}
	return n
}

// killShims SIGKILLs the containerd shims serving the containerd at socket.
func killShims(t *testing.T, socket string) int {
	t.Helper()
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte("containerd-shim")) || !bytes.Contains(cmdline, []byte(socket)) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// killCgroup SIGKILLs every process in the cgroup v1 pids (or v2) tree at root.
func killCgroup(t *testing.T, root string) int {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/pids", root)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir = filepath.Join("/sys/fs/cgroup", root)
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "cgroup.procs" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil // a cgroup removed meanwhile
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("kill the processes under cgroup %s: %v", dir, err)
	}
	return n
}
