package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// retried exits 42 on its first run and 1 on its second (its emptyDir outlives a run);
// once exits 0 beside a container that keeps running; unhealthy fails its liveness probe
// and restarts nothing.
const restartRulesPods = `apiVersion: v1
kind: Pod
metadata: {name: retried}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    imagePullPolicy: Never
    command: [sh, -c, "if [ -e /data/ran ]; then exit 1; fi; touch /data/ran; exit 42"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, emptyDir: {}}
---
apiVersion: v1
kind: Pod
metadata: {name: once}
spec:
  restartPolicy: Always
  containers:
  - name: once
    image: localhost/minik8s/busybox:v1
    imagePullPolicy: Never
    command: ["true"]
    restartPolicy: Never
  - name: server
    image: localhost/minik8s/busybox:v1
    imagePullPolicy: Never
    command: [sleep, "3600"]
---
apiVersion: v1
kind: Pod
metadata: {name: unhealthy}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: localhost/minik8s/busybox:v1
    imagePullPolicy: Never
    command: [sleep, "3600"]
    livenessProbe: {exec: {command: ["false"]}, periodSeconds: 1, failureThreshold: 1}
`

// restartAllPod's main exits 42 until its init container has run twice.
const restartAllPod = `apiVersion: v1
kind: Pod
metadata: {name: restarted-all}
spec:
  restartPolicy: Never
  initContainers:
  - name: setup
    image: localhost/minik8s/busybox:v1
    imagePullPolicy: Never
    command: [sh, -c, "echo run >> /data/runs"]
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: main
    image: localhost/minik8s/busybox:v1
    imagePullPolicy: Never
    command: [sh, -c, "if [ $(wc -l < /data/runs) -lt 2 ]; then exit 42; fi; sleep 3600"]
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, emptyDir: {}}
`

// TestContainerRestartRules: a container's restartPolicy and restartPolicyRules
// (ContainerRestartRules, on in kube 1.35+) decide over the pod's restartPolicy: a Never
// pod's container restarts after exit code 42, then stays terminated after 1 and the pod
// fails, as the kubelet's; an Always pod's container with restartPolicy Never runs once
// while the pod keeps running. Beside them, a Never pod's only container failing its
// liveness probe is stopped as the kubelet kills such a pod ("Stopping container app"),
// and the pod fails with the container's Error.
func TestContainerRestartRules(t *testing.T) {
	l := upLab(t, "node-rrules", 1)
	applyYAML(t, l, restartRulesPods)

	waitFor(t, "the retried pod Failed", 3*time.Minute, func() (bool, string) {
		p := podNow(l, "retried")
		return p.Status.Phase == corev1.PodFailed, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	p := podNow(l, "retried")
	cs := p.Status.ContainerStatuses[0]
	if term := cs.State.Terminated; term == nil || term.ExitCode != 1 || term.Reason != "Error" {
		t.Errorf("state %+v, want terminated with exit code 1 (Error)", cs.State)
	}
	if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 42 {
		t.Errorf("lastState %+v, want the run that exited 42", cs.LastTerminationState)
	}
	if cs.RestartCount != 1 {
		t.Errorf("restartCount %d, want 1", cs.RestartCount)
	}

	// A restart would come in the sync that sees the exit, before it writes the status:
	// once reported terminated has not been restarted.
	waitFor(t, "once exited for good while server runs", 3*time.Minute, func() (bool, string) {
		p := podNow(l, "once")
		var once, server corev1.ContainerStatus
		for _, cs := range p.Status.ContainerStatuses {
			switch cs.Name {
			case "once":
				once = cs
			case "server":
				server = cs
			}
		}
		done := p.Status.Phase == corev1.PodRunning && server.State.Running != nil &&
			once.State.Terminated != nil && once.State.Terminated.Reason == "Completed" && once.RestartCount == 0
		return done, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})

	waitFor(t, "the unhealthy pod Failed", 3*time.Minute, func() (bool, string) {
		p := podNow(l, "unhealthy")
		return p.Status.Phase == corev1.PodFailed, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	if term := podNow(l, "unhealthy").Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Error" || term.ExitCode == 0 {
		t.Errorf("state of the unhealthy container %+v, want terminated with Error", term)
	}
	events := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=unhealthy,reason=Killing", "-o", "jsonpath={.items[*].message}")
	if events != "Stopping container app" {
		t.Errorf("Killing events of the unhealthy pod %q, want the kubelet's %q", events, "Stopping container app")
	}
}

// TestRestartAllContainers: a container exiting with a code its RestartAllContainers rule
// matches (RestartAllContainersOnContainerExits, beta and on in kube 1.36) starts the whole
// pod over in place: its init container runs again beside the same emptyDir, each container
// counts a restart whose lastState is the kubelet's RestartingAllContainers, and the pod
// runs with the AllContainersRestarting condition back to False.
func TestRestartAllContainers(t *testing.T) {
	l := upLab(t, "node-rall", 1)
	applyYAML(t, l, restartAllPod)
	var p corev1.Pod
	// Running again, not the first run's Running: main exits 42 a moment after that is
	// written, and the relist (every second) then starts the pod over.
	waitFor(t, "restarted-all running again", 3*time.Minute, func() (bool, string) {
		p = podNow(l, "restarted-all")
		running := len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil &&
			p.Status.ContainerStatuses[0].RestartCount > 0
		return p.Status.Phase == corev1.PodRunning && running, fmt.Sprintf("%s %+v %+v", p.Status.Phase, p.Status.InitContainerStatuses, p.Status.ContainerStatuses)
	})
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount != 1 || last == nil || last.Reason != "RestartingAllContainers" || last.ExitCode != 137 {
			t.Errorf("%s: restartCount %d, lastState %+v; want 1 and terminated RestartingAllContainers (137)", cs.Name, cs.RestartCount, cs.LastTerminationState)
		}
	}
	if runs := strings.TrimSpace(mustKubectl(t, l, "exec", "restarted-all", "-c", "main", "--", "cat", "/data/runs")); runs != "run\nrun" {
		t.Errorf("/data/runs %q, want two runs of the init container in the same pod", runs)
	}
	var cond *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.AllContainersRestarting {
			cond = &p.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != corev1.ConditionFalse {
		t.Errorf("AllContainersRestarting %+v, want False", cond)
	}
}
