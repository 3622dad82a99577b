package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
	corev1 "k8s.io/api/core/v1"
)

const lifecyclePods = `apiVersion: v1
kind: Pod
metadata: {name: init}
spec:
  initContainers:
  - {name: first, image: localhost/minik8s/busybox:v1, command: [sleep, "3"]}
  - {name: second, image: localhost/minik8s/busybox:v1, command: [sleep, "1"]}
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: badinit}
spec:
  initContainers:
  - {name: setup, image: localhost/minik8s/busybox:v1, command: [sh, -c, "echo setup failed; exit 3"]}
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: hooks}
spec:
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'trap "echo got TERM; exit 0" TERM; echo started; while true; do sleep 1; done']
    lifecycle:
      postStart: {exec: {command: [touch, /tmp/healthy]}}
      preStop: {exec: {command: [sh, -c, "echo prestop > /proc/1/fd/1"]}}
    readinessProbe: {exec: {command: [cat, /tmp/healthy]}, periodSeconds: 1}
    livenessProbe: {exec: {command: [cat, /tmp/healthy]}, periodSeconds: 1, failureThreshold: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  readinessGates: [{conditionType: example.com/load-balancer}]
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  restartPolicy: Never
  activeDeadlineSeconds: 5
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: last-words}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000}
  containers:
  - {name: file, image: localhost/minik8s/busybox:v1, command: [sh, -c, "echo goodbye > /dev/termination-log; exit 3"]}
  - name: logs
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, "echo first; echo it broke; exit 4"]
    terminationMessagePolicy: FallbackToLogsOnError
---
apiVersion: v1
kind: Pod
metadata: {name: no-command}
spec:
  containers:
  - {name: app, image: localhost/minik8s/busybox:v1, command: [no-such-command]}
`

// TestPodLifecycle: init containers run one after the other before the app (kubectl
// shows Init:N/M, then Running; a failing one Init:CrashLoopBackOff); postStart runs
// before the exec probes look, a failed exec liveness probe runs preStop before the
// stop signal (seen in the previous container's log), and activeDeadlineSeconds fails a pod.
func TestPodLifecycle(t *testing.T) {
	l := upLab(t, "e2e-life", 1)
	ctx := context.Background()
	applyYAML(t, l, lifecyclePods)

	seen := map[string]bool{}
	waitFor(t, "the init pod Running", 90*time.Second, func() (bool, string) {
		s := podStatus(ctx, l, "init")
		seen[s] = true
		return s == "Running", s
	})
	if !seen["Init:0/2"] {
		t.Errorf("kubectl never showed Init:0/2 for the init pod; it showed %v", seen)
	}
	p := podNow(l, "init")
	first, second := p.Status.InitContainerStatuses[0].State.Terminated, p.Status.InitContainerStatuses[1].State.Terminated
	if first == nil || second == nil || first.Reason != "Completed" || second.Reason != "Completed" {
		t.Fatalf("init container statuses %+v", p.Status.InitContainerStatuses)
	}
	if second.StartedAt.Before(&first.FinishedAt) {
		t.Errorf("second init container started at %s, before the first finished at %s", second.StartedAt, first.FinishedAt)
	}
	if app := p.Status.ContainerStatuses[0].State.Running; app == nil || app.StartedAt.Before(&second.FinishedAt) {
		t.Errorf("app container %+v started before the init containers finished (%s)", app, second.FinishedAt)
	}

	waitFor(t, "the bad init pod in Init:CrashLoopBackOff", 60*time.Second, func() (bool, string) {
		s := podStatus(ctx, l, "badinit")
		return s == "Init:CrashLoopBackOff", s
	})
	if p := podNow(l, "badinit"); p.Status.Phase != corev1.PodPending || p.Status.ContainerStatuses[0].State.Waiting == nil {
		t.Errorf("bad init pod: phase %s, app %+v", p.Status.Phase, p.Status.ContainerStatuses[0].State)
	}
	// A crash-looping container's last run has logs, as the kubelet serves them; the app
	// container that never ran has none, and says why.
	if out := mustKubectl(t, l, "logs", "badinit", "-c", "setup"); !strings.Contains(out, "setup failed") {
		t.Errorf("kubectl logs of the crash-looping init container: %q", out)
	}
	if out, err := cluster.Kubectl(ctx, l, "logs", "badinit", "-c", "app"); err == nil || !strings.Contains(out, `container "app" in pod "badinit" is waiting to start: PodInitializing`) {
		t.Errorf("kubectl logs of the app container that never ran: %v %q", err, out)
	}

	// postStart made /tmp/healthy, so the exec readiness probe passes.
	waitFor(t, "the hooks pod Ready", 60*time.Second, func() (bool, string) {
		for _, c := range podNow(l, "hooks").Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue, string(c.Status)
			}
		}
		return false, "no Ready condition"
	})
	mustKubectl(t, l, "exec", "hooks", "--", "rm", "/tmp/healthy")
	waitFor(t, "the hooks container restarted by its exec liveness probe", 60*time.Second, func() (bool, string) {
		cs := podNow(l, "hooks").Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1, fmt.Sprint(cs)
	})
	prev := mustKubectl(t, l, "logs", "hooks", "--previous")
	if i, j := strings.Index(prev, "prestop"), strings.Index(prev, "got TERM"); i < 0 || j < 0 || i > j {
		t.Errorf("previous log of the hooks container should show preStop before SIGTERM:\n%s", prev)
	}
	events := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=hooks")
	if !strings.Contains(events, "Liveness probe failed") {
		t.Errorf("events of the hooks pod lack the failed exec liveness probe:\n%s", events)
	}

	// A readiness gate holds Ready back until its condition, set by someone else, is True.
	conditions := func() (ready, containersReady string) {
		for _, c := range podNow(l, "gated").Status.Conditions {
			switch c.Type {
			case corev1.PodReady:
				ready = string(c.Status) + " " + c.Reason
			case corev1.ContainersReady:
				containersReady = string(c.Status)
			}
		}
		return
	}
	waitFor(t, "the gated pod's containers ready", 60*time.Second, func() (bool, string) {
		r, c := conditions()
		return c == "True", r + "/" + c
	})
	if r, _ := conditions(); r != "False ReadinessGatesNotReady" {
		t.Errorf("gated pod Ready = %q, want False ReadinessGatesNotReady", r)
	}
	mustKubectl(t, l, "patch", "pod", "gated", "--subresource=status", "--type=json",
		"-p", `[{"op":"add","path":"/status/conditions/-","value":{"type":"example.com/load-balancer","status":"True"}}]`)
	waitFor(t, "the gated pod Ready once its gate is True", 30*time.Second, func() (bool, string) {
		r, _ := conditions()
		return r == "True ", r
	})

	waitFor(t, "the deadline pod failed", 60*time.Second, func() (bool, string) {
		p := podNow(l, "deadline")
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "DeadlineExceeded", fmt.Sprint(p.Status.Phase, " ", p.Status.Reason)
	})

	// A command not in the image: StartError (128), restarts backing off as a crash's.
	waitFor(t, "the no-command pod in CrashLoopBackOff after a StartError", 60*time.Second, func() (bool, string) {
		cs := podNow(l, "no-command").Status.ContainerStatuses
		if len(cs) != 1 || cs[0].LastTerminationState.Terminated == nil {
			return false, fmt.Sprint(cs)
		}
		last := cs[0].LastTerminationState.Terminated
		return podStatus(ctx, l, "no-command") == "CrashLoopBackOff" && last.Reason == "StartError" && last.ExitCode == 128 &&
			strings.Contains(last.Message, `"no-such-command": executable file not found`), fmt.Sprint(podStatus(ctx, l, "no-command"), " ", *last)
	})
	attempts := 0
	for _, n := range strings.Fields(mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=no-command,reason=Failed", "-o", "jsonpath={.items[*].count}")) {
		var c int
		fmt.Sscan(n, &c)
		attempts += c
	}
	if attempts == 0 || attempts > 8 { // backing off: at 0, 0, 10, 30, 70 s ...
		t.Errorf("%d Failed events of the no-command pod, want one per start, backing off", attempts)
	}
	// The kubelet's condition order, as kubectl describe lists it.
	describe := mustKubectl(t, l, "describe", "pod", "no-command")
	if i, j := strings.Index(describe, "PodReadyToStartContainers"), strings.Index(describe, "PodScheduled"); i < 0 || j < i {
		t.Errorf("kubectl describe lists the conditions out of the kubelet's order:\n%s", describe)
	}

	waitFor(t, "the last words of both containers", 60*time.Second, func() (bool, string) {
		got := map[string]string{}
		for _, cs := range podNow(l, "last-words").Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				got[cs.Name] = cs.State.Terminated.Message
			}
		}
		return got["file"] == "goodbye\n" && got["logs"] == "first\nit broke\n", fmt.Sprintf("%q", got)
	})
}
