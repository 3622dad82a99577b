package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	corev1 "k8s.io/api/core/v1"
)

const probedPods = `apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  containers:
  - name: netexec
    image: localhost/minik8s/netexec:v1
    livenessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, failureThreshold: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: ready, labels: {app: ready}}
spec:
  containers:
  - name: netexec
    image: localhost/minik8s/netexec:v1
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Service
metadata: {name: ready}
spec:
  selector: {app: ready}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: tcp}
spec:
  containers:
  - name: netexec
    image: localhost/minik8s/netexec:v1
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: grpc}
spec:
  containers:
  - name: netexec
    image: localhost/minik8s/netexec:v1
    readinessProbe: {grpc: {port: 8082}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: exec}
spec:
  containers:
  - name: netexec
    image: localhost/minik8s/netexec:v1
    readinessProbe: {exec: {command: [wget, -q, -O, /dev/null, "http://127.0.0.1:8080/healthz"]}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: slow}
spec:
  containers:
  - name: netexec
    image: localhost/minik8s/netexec:v1
    command: [sh, -c, 'sleep 8; exec /netexec']
    startupProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, failureThreshold: 20}
    livenessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, failureThreshold: 1}
`

// TestProbes: liveness restarts a container whose /healthz fails, readiness takes a pod out
// of its Service's ready endpoints and back, a TCP probe keeps a pod Ready, and a startup
// probe keeps a slow container from being killed by its liveness probe.
func TestProbes(t *testing.T) {
	l := upLab(t, "e2e-probe", 1)
	ctx := context.Background()
	applyYAML(t, l, probedPods)
	node := lab.NetNSPath(l.Nodes[0].NetNS)
	ready := func(p corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	waitFor(t, "the ready, tcp, grpc and exec pods Ready through their probes", 60*time.Second, func() (bool, string) {
		r, tcp, grpc, exec := ready(podNow(l, "ready")), ready(podNow(l, "tcp")), ready(podNow(l, "grpc")), ready(podNow(l, "exec"))
		return r && tcp && grpc && exec, fmt.Sprintf("ready=%v tcp=%v grpc=%v exec=%v", r, tcp, grpc, exec)
	})
	// The gRPC and exec probes also fail when the server turns unhealthy.
	node0 := lab.NetNSPath(l.Nodes[0].NetNS)
	for _, name := range []string{"grpc", "exec"} {
		if _, err := httpGetIn(node0, "http://"+podNow(l, name).Status.PodIP+":8080/sethealth?code=503"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the "+name+" pod NotReady", 20*time.Second, func() (bool, string) { return !ready(podNow(l, name)), "still Ready" })
	}
	waitReadyEndpoints(t, l, "ready", 1)

	// Readiness: /healthz answers 500, the pod leaves the Service's ready endpoints; back.
	readyIP := podNow(l, "ready").Status.PodIP
	if _, err := httpGetIn(node, "http://"+readyIP+":8080/sethealth?code=500"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ready pod NotReady", 20*time.Second, func() (bool, string) { return !ready(podNow(l, "ready")), "still Ready" })
	waitReadyEndpoints(t, l, "ready", 0)
	if _, err := httpGetIn(node, "http://"+readyIP+":8080/sethealth?code=200"); err != nil {
		t.Fatal(err)
	}
	waitReadyEndpoints(t, l, "ready", 1)

	// Liveness: two failures in a row restart the container.
	waitFor(t, "the live pod running", 60*time.Second, func() (bool, string) { return podNow(l, "live").Status.PodIP != "", "no IP" })
	if _, err := httpGetIn(node, "http://"+podNow(l, "live").Status.PodIP+":8080/sethealth?code=500"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the live pod's container restarted", 30*time.Second, func() (bool, string) {
		p := podNow(l, "live")
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1, fmt.Sprint(p.Status.ContainerStatuses)
	})
	events, _ := cluster.Kubectl(ctx, l, "get", "events", "--field-selector", "involvedObject.name=live")
	for _, want := range []string{"Liveness probe failed: HTTP probe failed with statuscode: 500", "Container netexec failed liveness probe, will be restarted"} {
		if !strings.Contains(events, want) {
			t.Errorf("events of the live pod lack %q:\n%s", want, events)
		}
	}

	// Startup: the slow container (8 s before it serves) is never killed by its liveness
	// probe (failureThreshold 1), because the startup probe gates it.
	waitFor(t, "the slow pod Ready", 60*time.Second, func() (bool, string) { return ready(podNow(l, "slow")), "not ready" })
	if p := podNow(l, "slow"); p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the slow container was restarted %d times before its startup probe succeeded", p.Status.ContainerStatuses[0].RestartCount)
	}
}
