package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/syncbuf"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

const nodeAPIPods = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  nodeName: node-1
  containers:
  - {name: netexec, image: localhost/minik8s/netexec:v1}
  - name: talker
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'for i in 1 2 3 4 5; do echo line-$i; done; sleep 3600']
---
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  nodeName: node-1
  containers:
  - {name: c, image: localhost/minik8s/busybox:v1, command: [sh, -c, 'echo run-at-$(date +%s%N); sleep 5; exit 1']}
---
apiVersion: v1
kind: Pod
metadata: {name: asker}
spec:
  nodeName: node-1
  restartPolicy: Never
  containers:
  - name: ask
    image: localhost/minik8s/busybox:v1
    stdin: true
    stdinOnce: true
    command: [sh, -c, 'echo started; read name; echo hello-$name; sleep 1']
---
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  nodeName: node-1
  restartPolicy: Never
  containers:
  - {name: sh, image: localhost/minik8s/busybox:v1, stdin: true, tty: true, command: [sh]}
`

// timestamped is one line of `kubectl logs --timestamps`: RFC 3339 time, then the output.
var timestamped = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z line-5\n$`)

// TestNodeAPI: kubectl logs, exec (stdin, exit code, SPDY and WebSocket kubectl) and
// port-forward go through miniapi to minilet's node API on a real lab.
func TestNodeAPI(t *testing.T) {
	l := upLab(t, "napi", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	applyYAML(t, l, nodeAPIPods)
	waitRunning(t, l, "web")

	// Logs: all, --tail, and a wrong container named with the pod's.
	var out string
	var err error
	for range 20 {
		if out, err = cluster.Kubectl(ctx, l, "logs", "web", "-c", "talker"); err == nil && strings.Contains(out, "line-5") {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(out, "line-1\n") || !strings.Contains(out, "line-5\n") {
		t.Fatalf("kubectl logs: %v\n%s", err, out)
	}
	if out, err := cluster.Kubectl(ctx, l, "logs", "web", "-c", "talker", "--tail", "2"); err != nil || out != "line-4\nline-5\n" {
		t.Errorf("kubectl logs --tail 2: %v\n%q", err, out)
	}
	if out, err := cluster.Kubectl(ctx, l, "logs", "web", "-c", "talker", "--tail", "1", "--timestamps"); err != nil || !timestamped.MatchString(out) {
		t.Errorf("kubectl logs --tail 1 --timestamps: %v\n%q", err, out)
	}
	if out, err := cluster.Kubectl(ctx, l, "logs", "web", "-c", "talker", "--since", "1h"); err != nil || !strings.Contains(out, "line-5\n") {
		t.Errorf("kubectl logs --since 1h: %v\n%q", err, out)
	}
	if out, err := cluster.Kubectl(ctx, l, "logs", "web", "-c", "talker", "--since-time", "2099-01-01T00:00:00Z"); err != nil || out != "" {
		t.Errorf("kubectl logs --since-time in the future: %v\n%q", err, out)
	}
	if out, err := cluster.Kubectl(ctx, l, "logs", "web", "-c", "nope"); err == nil || !strings.Contains(out, "container nope is not valid for pod web") {
		t.Errorf("kubectl logs -c nope: %v\n%s", err, out)
	}

	// Exec: stdin piped in, exit code passed through. (Only stdout is compared: kubectl
	// 1.32's WebSocket client may log "Unknown stream id 1, discarding message" on stderr
	// for the empty frame that opens a stream, a race of its own, fixed in later
	// client-go.)
	cmd := cluster.KubectlCommand(ctx, l, "exec", "-i", "web", "-c", "talker", "--", "tr", "a-z", "A-Z")
	cmd.Stdin = strings.NewReader("hello\n")
	if out, errOut, err := outputs(cmd); err != nil || out != "HELLO\n" {
		t.Errorf("kubectl exec -i tr: %v\n%q\nstderr: %s", err, out, errOut)
	}
	cmd = cluster.KubectlCommand(ctx, l, "exec", "web", "-c", "talker", "--", "sh", "-c", "exit 3")
	if b, err := cmd.CombinedOutput(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("kubectl exec sh -c 'exit 3': exit %v, %v\n%s", cmd.ProcessState, err, b)
	}

	// Old (SPDY) and new (WebSocket first) kubectl both exec.
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(kubectl)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"kubectl.1.27", "kubectl.1.33"} {
		bin := filepath.Join(filepath.Dir(real), v)
		if _, err := os.Stat(bin); err != nil {
			// Older and newer kubectls are not something make test installs (only a kubectl).
			t.Logf("%s is not installed beside kubectl: its exec check is left out", v)
			continue
		}
		c := lab.Command(ctx, l.ControlPlane.NetNS, bin, "--kubeconfig", l.Kubeconfig, "exec", "web", "-c", "talker", "--", "echo", "hi-"+v)
		if out, errOut, err := outputs(c); err != nil || out != "hi-"+v+"\n" {
			t.Errorf("%s exec: %v\n%q\nstderr: %s", v, err, out, errOut)
		}
	}

	// kubectl 1.30+ speaks WebSocket (v5.channel.k8s.io) first: miniapi translates it to
	// SPDY for the node, so kubectl does not fall back (it says so at -v=4).
	cmd = cluster.KubectlCommand(ctx, l, "-v=4", "exec", "-i", "web", "-c", "talker", "--", "sh", "-c", "cat; exit 5")
	cmd.Stdin = strings.NewReader("over-websocket\n")
	b, _ := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 5 || !strings.Contains(string(b), "over-websocket") || strings.Contains(string(b), "fallback") {
		t.Errorf("kubectl exec over WebSocket: exit %v, want 5, the input echoed and no fallback to SPDY:\n%s", cmd.ProcessState, b)
	}

	// kubectl cp both ways (tar over exec, with stdin one way): a few MiB arrive intact.
	kubectlCp(ctx, t, l)

	// kubectl run -i --rm: the input reaches the new pod, its exit code is kubectl's,
	// kubectl names the failure as against a kubelet and deletes the pod.
	cmd = cluster.KubectlCommand(ctx, l, "run", "-i", "--rm", "--restart=Never", "runner", "--image=localhost/minik8s/busybox:v1",
		"--", "sh", "-c", "read a; echo got-$a; exit 3")
	cmd.Stdin = strings.NewReader("x\n")
	if b, _ := cmd.CombinedOutput(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 ||
		!strings.Contains(string(b), "got-x") || !strings.Contains(string(b), "pod default/runner terminated (Error)") {
		t.Errorf("kubectl run -i --rm ... exit 3: exit %v, want 3, got-x and kubectl's message:\n%s", cmd.ProcessState, b)
	}
	if out, err := cluster.Kubectl(ctx, l, "get", "pod", "runner", "--ignore-not-found", "-o", "name"); err != nil || out != "" {
		t.Errorf("kubectl run --rm left its pod: %v %q", err, out)
	}

	// kubectl attach -i: the input reaches the waiting container's stdin (stdinOnce), its
	// answer comes back, and the end of the input ends the attach.
	waitRunning(t, l, "asker")
	cmd = cluster.KubectlCommand(ctx, l, "-v=4", "attach", "-i", "asker")
	cmd.Stdin = strings.NewReader("world\n")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "hello-world") || strings.Contains(string(b), "fallback") {
		t.Errorf("kubectl attach -i: %v\n%s", err, b)
	}

	// kubectl attach -it to a shell on a terminal: what is typed runs, its output comes back,
	// and exit ends the attach.
	waitRunning(t, l, "shell")
	ttyAttachCtx, ttyAttachCancel := context.WithTimeout(ctx, 30*time.Second)
	defer ttyAttachCancel()
	attach := lab.Command(ttyAttachCtx, l.ControlPlane.NetNS, "script", "-qec", "kubectl --kubeconfig "+l.Kubeconfig+" attach -it shell", "/dev/null")
	attach.Stdin = strings.NewReader("tty; echo sum-$((40+2))\nexit\n")
	if b, err := attach.CombinedOutput(); err != nil || !strings.Contains(string(b), "sum-42") || !strings.Contains(string(b), "/dev/pts/") {
		t.Errorf("kubectl attach -it: %v, want the shell's terminal and sum-42:\n%s", err, b)
	}

	// exec -it on a pseudo-terminal (script gives kubectl one): the process gets a terminal
	// and its exit code comes back.
	ttyCtx, ttyCancel := context.WithTimeout(ctx, 30*time.Second)
	defer ttyCancel()
	it := lab.Command(ttyCtx, l.ControlPlane.NetNS, "script", "-qec",
		"kubectl --kubeconfig "+l.Kubeconfig+" exec -it web -c talker -- sh -c 'tty; exit 4'", "/dev/null")
	if b, _ := it.CombinedOutput(); it.ProcessState == nil || it.ProcessState.ExitCode() != 4 || !strings.Contains(string(b), "/dev/pts/") {
		t.Errorf("kubectl exec -it: exit %v, want 4 and a /dev/pts terminal:\n%s", it.ProcessState, b)
	}

	// Port-forward, reached from the same (control-plane) namespace.
	pf := cluster.KubectlCommand(ctx, l, "-v=4", "port-forward", "pod/web", "18080:8080", "18081:9999")
	var pfOut syncbuf.Buffer // read while kubectl writes
	pf.Stdout, pf.Stderr = &pfOut, &pfOut
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
	var body []byte
	for range 40 {
		time.Sleep(250 * time.Millisecond)
		get := lab.Command(ctx, l.ControlPlane.NetNS, "busybox", "wget", "-qO-", "http://127.0.0.1:18080/hostname")
		if body, err = get.CombinedOutput(); err == nil {
			break
		}
	}
	if err != nil || strings.TrimSpace(string(body)) != "web" {
		t.Errorf("wget through port-forward: %v\n%s\nport-forward: %s", err, body, pfOut.String())
	}
	// A connection to a closed port is refused on its own stream, and kubectl reports it
	// for that connection (kubectl since 1.30 then drops the whole tunnel itself; that the
	// node keeps it is TestStreamsOverWebSocketAndSPDY's).
	closed := lab.Command(ctx, l.ControlPlane.NetNS, "busybox", "wget", "-qO-", "http://127.0.0.1:18081/")
	if b, err := closed.CombinedOutput(); err == nil {
		t.Errorf("wget to a closed port through port-forward succeeded: %s", b)
	}
	waitFor(t, "kubectl port-forward to report the refused connection", 10*time.Second, func() (bool, string) {
		out := pfOut.String()
		return strings.Contains(out, "error forwarding port 9999 to pod ") &&
			strings.Contains(out, "failed to connect to localhost:9999 inside namespace ") &&
			strings.Contains(out, "IPv4: dial tcp4 127.0.0.1:9999: connect: connection refused"), out
	})
	if strings.Contains(pfOut.String(), "fallback") {
		t.Errorf("port-forward fell back to SPDY:\n%s", pfOut.String())
	}

	// --previous is the run the status names as the last terminated state, as with the
	// kubelet: in CrashLoopBackOff the run that just ended (what plain logs show too), once
	// running again the run before the current one.
	crasherLogs(ctx, t, l, "CrashLoopBackOff", func(prev, cur string) bool { return prev == cur })
	crasherLogs(ctx, t, l, "running", func(prev, cur string) bool { return prev != cur })

	// A container that never restarted has no previous run: the node's answer reaches
	// kubectl as a Status with its text.
	if out, err := cluster.Kubectl(ctx, l, "logs", "web", "-c", "talker", "--previous"); err == nil ||
		!strings.Contains(out, `previous terminated container "talker" in pod "web" not found`) {
		t.Errorf("kubectl logs --previous of a container that never restarted: %v %q", err, out)
	}

	// A follow ends cleanly when its pod is deleted.
	follow := cluster.KubectlCommand(ctx, l, "logs", "-f", "web", "-c", "talker")
	var followOut strings.Builder
	follow.Stdout, follow.Stderr = &followOut, &followOut
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if out, err := cluster.Kubectl(ctx, l, "delete", "pod", "web", "--grace-period=1", "--wait=false"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	ended := make(chan error, 1)
	go func() { ended <- follow.Wait() }()
	select {
	case err := <-ended:
		if err != nil || !strings.Contains(followOut.String(), "line-5") {
			t.Errorf("kubectl logs -f of a deleted pod: %v\n%s", err, followOut.String())
		}
	case <-time.After(60 * time.Second):
		_ = follow.Process.Kill()
		t.Errorf("kubectl logs -f still runs 60s after its pod was deleted:\n%s", followOut.String())
	}
}

// crasherLogs waits for the crasher pod's container to be in state (a waiting reason, or
// "running") after a crash, reads `kubectl logs --previous` and `kubectl logs` and checks
// them with want, if the status did not change meanwhile (else it tries again).
func crasherLogs(ctx context.Context, t *testing.T, l *lab.Lab, state string, want func(prev, cur string) bool) {
	t.Helper()
	const jsonpath = `{.status.containerStatuses[0].state.waiting.reason}{.status.containerStatuses[0].state.running.startedAt}/{.status.containerStatuses[0].lastState.terminated.containerID}`
	status := func() (string, bool) {
		out, err := cluster.Kubectl(ctx, l, "get", "pod", "crasher", "-o", "jsonpath="+jsonpath)
		now, last, _ := strings.Cut(out, "/")
		inState := now == state || (state == "running" && strings.HasPrefix(now, "20"))
		return out, err == nil && inState && last != ""
	}
	var seen string
	waitFor(t, "the crasher "+state+" after a crash, its logs read meanwhile", 100*time.Second, func() (bool, string) {
		before, ok := status()
		if !ok {
			return false, before
		}
		prev, err := cluster.Kubectl(ctx, l, "logs", "crasher", "--previous")
		cur, err2 := cluster.Kubectl(ctx, l, "logs", "crasher")
		if after, _ := status(); after != before || err != nil || err2 != nil {
			return false, fmt.Sprintf("%s then %s; %v %v", before, after, err, err2)
		}
		seen = fmt.Sprintf("previous %q, current %q", prev, cur)
		if !strings.HasPrefix(prev, "run-at-") || !strings.HasPrefix(cur, "run-at-") || !want(prev, cur) {
			t.Errorf("kubectl logs --previous with the crasher %s (%s): %s", state, before, seen)
		}
		return true, seen
	})
	t.Logf("crasher %s: %s", state, seen)
}

// kubectlCp copies a 4 MiB file into web's talker container and back, and checks both
// copies' SHA-256.
func kubectlCp(ctx context.Context, t *testing.T, l *lab.Lab) {
	t.Helper()
	dir := t.TempDir()
	data := make([]byte, 4<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%x", sha256.Sum256(data))
	src, back := filepath.Join(dir, "big.bin"), filepath.Join(dir, "back.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cluster.Kubectl(ctx, l, "cp", src, "web:/tmp/big.bin", "-c", "talker"); err != nil {
		t.Fatalf("kubectl cp to the pod: %v\n%s", err, out)
	}
	if out, err := cluster.Kubectl(ctx, l, "exec", "web", "-c", "talker", "--", "sha256sum", "/tmp/big.bin"); err != nil || !strings.HasPrefix(out, want+" ") {
		t.Errorf("the copy in the pod: %v %q, want sha256 %s", err, out, want)
	}
	if out, err := cluster.Kubectl(ctx, l, "cp", "web:/tmp/big.bin", back, "-c", "talker"); err != nil {
		t.Fatalf("kubectl cp from the pod: %v\n%s", err, out)
	}
	got, err := os.ReadFile(back)
	if err != nil || fmt.Sprintf("%x", sha256.Sum256(got)) != want {
		t.Errorf("the copy back: %v, %d bytes, want sha256 %s", err, len(got), want)
	}
}

// outputs runs cmd and returns its stdout and stderr apart.
func outputs(cmd *exec.Cmd) (stdout, stderr string, err error) {
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
