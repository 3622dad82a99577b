package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	corev1 "k8s.io/api/core/v1"
)

const loggers = `apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  containers:
  - name: count
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'i=0; while true; do echo "line $i"; i=$((i+1)); sleep 0.2; done']
  - name: quiet
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'echo "from the second container"; sleep 3600']
---
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - name: c
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'echo "run at $(cat /proc/uptime)"; sleep 1; exit 3']
`

// TestKubectlLogs: kubectl logs through miniapi's pods/log and minilet's node API, with
// its options, and the errors kube-apiserver gives.
func TestKubectlLogs(t *testing.T) {
	l := upLab(t, "e2e-logs", 1)
	ctx := context.Background()
	applyYAML(t, l, loggers)
	waitRunning(t, l, "talker")
	time.Sleep(time.Second)

	out, err := cluster.Kubectl(ctx, l, "logs", "talker", "-c", "count")
	if err != nil || !strings.HasPrefix(out, "line 0\nline 1\n") {
		t.Errorf("kubectl logs talker -c count: %v\n%s", err, out)
	}
	out, err = cluster.Kubectl(ctx, l, "logs", "talker", "-c", "count", "--tail=2")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "line ") {
		t.Errorf("kubectl logs --tail=2: %v\n%q", err, out)
	}
	out, err = cluster.Kubectl(ctx, l, "logs", "talker", "-c", "quiet")
	if err != nil || out != "from the second container\n" {
		t.Errorf("kubectl logs -c quiet: %v\n%q", err, out)
	}
	out, err = cluster.Kubectl(ctx, l, "logs", "talker", "-c", "count", "--limit-bytes=4")
	if err != nil || out != "line" {
		t.Errorf("kubectl logs --limit-bytes=4: %v %q", err, out)
	}
	// Following: new lines arrive while kubectl runs (it is stopped after 3 s).
	followCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	cmd := cluster.KubectlCommand(followCtx, l, "logs", "-f", "--tail=1", "talker", "-c", "count")
	var followed strings.Builder
	cmd.Stdout = &followed
	_ = cmd.Run()
	cancel()
	if n := strings.Count(followed.String(), "line "); n < 5 {
		t.Errorf("kubectl logs -f printed %d lines in 3 s of a container writing 5 a second:\n%s", n, followed.String())
	}

	// Without -c kubectl picks the first container and says so.
	out, err = cluster.Kubectl(ctx, l, "logs", "talker")
	if err != nil || !strings.Contains(out, `Defaulted container "count" out of: count, quiet`) || !strings.Contains(out, "line 0\n") {
		t.Errorf("kubectl logs talker: %v\n%s", err, out)
	}
	// The errors users see.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "talker", "-c", "nope"}, "container nope is not valid for pod talker"},
		{[]string{"logs", "talker", "-c", "count", "--timestamps"}, "timestamps is not supported"},
		{[]string{"logs", "nobody"}, `pods "nobody" not found`},
	} {
		out, err := cluster.Kubectl(ctx, l, tc.args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("kubectl %v: %v\n%s\nwant an error saying %q", tc.args, err, out, tc.want)
		}
	}

	// --previous shows the instance before the last restart.
	restarted := waitRestarted(t, l, "crasher")
	out, err = cluster.Kubectl(ctx, l, "logs", "crasher", "--previous")
	if err != nil || !strings.HasPrefix(out, "run at ") {
		t.Errorf("kubectl logs --previous after %d restarts: %v\n%s", restarted, err, out)
	}
}

// waitRestarted waits for a pod's first container to have restarted and returns the count.
func waitRestarted(t *testing.T, l *lab.Lab, name string) int32 {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := cluster.Kubectl(context.Background(), l, "get", "pod", name, "-o", "json")
		var pod corev1.Pod
		if err == nil && json.Unmarshal([]byte(out), &pod) == nil && len(pod.Status.ContainerStatuses) > 0 {
			cs := pod.Status.ContainerStatuses[0]
			if cs.RestartCount > 0 && cs.LastTerminationState.Terminated != nil {
				return cs.RestartCount
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s did not restart within 60 s: %v\n%s", name, err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
