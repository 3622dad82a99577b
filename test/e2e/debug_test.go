package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/syncbuf"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// The target runs netexec alone: the debugging tools come with the ephemeral container.
const debugTargetPod = `apiVersion: v1
kind: Pod
metadata: {name: target}
spec:
  nodeName: node-1
  containers:
  - {name: app, image: localhost/minik8s/netexec:v1}
`

// A namespace whose pods must meet the baseline Pod Security Standard.
const debugGuarded = `apiVersion: v1
kind: Namespace
metadata:
  name: guarded
  labels: {pod-security.kubernetes.io/enforce: baseline}
---
apiVersion: v1
kind: Pod
metadata: {name: target, namespace: guarded}
spec:
  nodeName: node-1
  containers:
  - {name: app, image: localhost/minik8s/netexec:v1}
`

const debugImage = "--image=localhost/minik8s/busybox:v1"

// TestKubectlDebug: real kubectl debug adds ephemeral containers to a running pod through
// pods/ephemeralcontainers; minilet runs them in the pod's network namespace and, with
// --target, in the target container's PID namespace, once and never again; their output
// is in kubectl logs, and kubectl debug -i talks to one through stdin.
func TestKubectlDebug(t *testing.T) {
	l := upLab(t, "debug", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	applyYAML(t, l, debugTargetPod)
	waitRunning(t, l, "target")
	podIP := mustKubectl(t, l, "get", "pod", "target", "-o", "jsonpath={.status.podIP}")

	mustKubectl(t, l, "debug", "target", debugImage, "--target=app", "-c", "dbg", "--",
		"sh", "-c", "ip -4 addr show eth0; echo pid1=$(tr '\\0' ' ' </proc/1/cmdline); ps")
	exited := func() (bool, string) {
		out, _ := cluster.Kubectl(ctx, l, "get", "pod", "target", "-o",
			`jsonpath={.status.ephemeralContainerStatuses[?(@.name=="dbg")].state.terminated.exitCode}`)
		return out == "0", out
	}
	waitFor(t, "the debug container to exit 0", 90*time.Second, exited)
	logs := mustKubectl(t, l, "logs", "target", "-c", "dbg")
	if !strings.Contains(logs, "inet "+podIP+"/") {
		t.Errorf("the debug container's eth0 is not the pod's (%s):\n%s", podIP, logs)
	}
	if !strings.Contains(logs, "pid1=/netexec") || strings.Contains(logs, "pause") {
		t.Errorf("the debug container does not see the target's processes (/netexec as PID 1, no pause):\n%s", logs)
	}

	// It is not restarted, and the pod goes on as it was.
	time.Sleep(3 * time.Second)
	out := mustKubectl(t, l, "get", "pod", "target", "-o",
		`jsonpath={.status.phase} {.status.containerStatuses[0].ready} {.status.ephemeralContainerStatuses[0].restartCount} {.status.ephemeralContainerStatuses[0].state.terminated.reason} {.status.ephemeralContainerStatuses[0].ready}`)
	if out != "Running true 0 Completed false" {
		t.Errorf("after the debug container exited: %q, want %q", out, "Running true 0 Completed false")
	}

	// Interactive: kubectl debug -i waits for the container, attaches, and what comes on its
	// stdin runs in the shell. The input stays open until the answer is back: as with
	// containerd's CRI, the end of a client's input detaches it (stdinOnce is not set).
	cmd := cluster.KubectlCommand(ctx, l, "debug", "-i", "target", debugImage, "--target=app", "-c", "shell", "--", "sh")
	var session syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &session, &session
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "echo answer-$((6*7)) $(hostname)\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shell's answer through kubectl debug -i", 90*time.Second, func() (bool, string) {
		return strings.Contains(session.String(), "answer-42 target"), session.String()
	})
	_, _ = io.WriteString(stdin, "exit\n")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("kubectl debug -i: %v\n%s", err, session.String())
	}
	waitFor(t, "the shell to exit", 60*time.Second, func() (bool, string) {
		out, _ := cluster.Kubectl(ctx, l, "get", "pod", "target", "-o",
			`jsonpath={.status.ephemeralContainerStatuses[?(@.name=="shell")].state.terminated.exitCode}`)
		return out == "0", out
	})
	// As users type it, on a terminal (script gives kubectl one): kubectl debug -it.
	ttyCtx, ttyCancel := context.WithTimeout(ctx, 90*time.Second)
	defer ttyCancel()
	it := lab.Command(ttyCtx, l.ControlPlane.NetNS, "script", "-qec",
		"kubectl --kubeconfig "+l.Kubeconfig+" debug -it target "+debugImage+" --target=app -c tty -- sh", "/dev/null")
	it.Stdin = strings.NewReader("tty; echo sum-$((40+2))\nexit\n")
	if b, err := it.CombinedOutput(); err != nil || !strings.Contains(string(b), "sum-42") || !strings.Contains(string(b), "/dev/pts/") {
		t.Errorf("kubectl debug -it: %v, want the shell's terminal and sum-42:\n%s", err, b)
	}

	out = mustKubectl(t, l, "get", "pod", "target", "-o", "jsonpath={.spec.ephemeralContainers[*].name}")
	if out != "dbg shell tty" {
		t.Errorf("the pod's ephemeral containers: %q, want dbg shell tty", out)
	}

	// kubectl 1.27 and 1.33 debug the same way, when installed beside kubectl.
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		real, _ := filepath.EvalSymlinks(kubectl)
		for _, v := range []string{"1.27", "1.33"} {
			bin := filepath.Join(filepath.Dir(real), "kubectl."+v)
			if _, err := os.Stat(bin); err != nil {
				t.Logf("kubectl.%s is not installed beside kubectl: its debug check is left out", v)
				continue
			}
			name := "k" + strings.ReplaceAll(v, ".", "")
			c := lab.Command(ctx, l.ControlPlane.NetNS, bin, "--kubeconfig", l.Kubeconfig, "debug", "target", debugImage, "--target=app", "-c", name, "--", "true")
			if b, err := c.CombinedOutput(); err != nil {
				t.Errorf("kubectl.%s debug: %v\n%s", v, err, b)
				continue
			}
			waitFor(t, name+" to exit 0", 60*time.Second, func() (bool, string) {
				out, _ := cluster.Kubectl(ctx, l, "get", "pod", "target", "-o",
					`jsonpath={.status.ephemeralContainerStatuses[?(@.name=="`+name+`")].state.terminated.exitCode}`)
				return out == "0", out
			})
		}
	}

	// Pod Security admission judges the pod with its new ephemeral container, as
	// kube-apiserver's does: a privileged one (--profile=sysadmin) breaks baseline, --profile=baseline
	// keeps to it.
	applyYAML(t, l, debugGuarded)
	if out, err := cluster.Kubectl(ctx, l, "debug", "-n", "guarded", "target", debugImage, "--profile=sysadmin", "-c", "root", "--", "true"); err == nil ||
		!strings.Contains(out, `violates PodSecurity "baseline:latest"`) || !strings.Contains(out, "privileged") {
		t.Errorf("a privileged debug container in a baseline namespace: %v\n%s", err, out)
	}
	if out, err := cluster.Kubectl(ctx, l, "debug", "-n", "guarded", "target", debugImage, "--profile=baseline", "-c", "plain", "--", "true"); err != nil {
		t.Errorf("a baseline debug container in a baseline namespace: %v\n%s", err, out)
	}

	// The subresource reads as the pod, as kube-apiserver serves it.
	raw := mustKubectl(t, l, "get", "--raw", "/api/v1/namespaces/default/pods/target/ephemeralcontainers")
	if !strings.Contains(raw, `"kind":"Pod"`) || !strings.Contains(raw, `"name":"shell"`) {
		t.Errorf("GET pods/target/ephemeralcontainers:\n%s", raw)
	}
}
