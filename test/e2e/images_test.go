package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/runtime/runtimetest"
)

// TestImagePulls: a pod pulls its image over plain HTTP (--insecure-registry) from the
// lab's registry in the control-plane namespace with the credentials of its
// imagePullSecret; the same image without the secret, and an image the registry lacks,
// end in ImagePullBackOff. The image is pushed to the same storage through a second
// registry process on the host's loopback.
func TestImagePulls(t *testing.T) {
	l := upLab(t, "e2e-pull", 1)
	e := testenv.RequireBuilt(t)
	ctx := context.Background()
	reg := runtimetest.StartRegistry(t, "lab", "s3cret")
	runtimetest.PushImage(t, cluster.ContainerdSocket(l), filepath.Join(e.ImagesDir, "netexec.tar"), reg.Addr+"/lab/netexec:v1", "lab", "s3cret")
	reg.ServeAlso(t, "lab", cluster.RegistryAddr, func(program string, args ...string) *exec.Cmd {
		return lab.Command(ctx, l.ControlPlane.NetNS, program, args...)
	})
	node := lab.NetNSPath(l.Nodes[0].NetNS)
	waitFor(t, "the lab registry answering the node", 30*time.Second, func() (bool, string) {
		_, err := httpGetIn(node, "http://"+cluster.RegistryAddr+"/v2/")
		return err != nil && strings.Contains(err.Error(), "401"), fmt.Sprint(err) // it asks for the password
	})
	registry := cluster.RegistryAddr
	image := registry + "/lab/netexec:v1"

	mustKubectl(t, l, "create", "secret", "docker-registry", "regcred",
		"--docker-server="+registry, "--docker-username=lab", "--docker-password=s3cret")
	applyYAML(t, l, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: noauth}
spec:
  containers: [{name: app, image: %[1]s, imagePullPolicy: Always}]
---
apiVersion: v1
kind: Pod
metadata: {name: missing}
spec:
  imagePullSecrets: [{name: regcred}]
  containers: [{name: app, image: %[2]s/lab/nope:v1}]
`, image, registry))
	for _, pod := range []string{"noauth", "missing"} {
		seen := map[string]bool{}
		waitFor(t, pod+" in ImagePullBackOff", 60*time.Second, func() (bool, string) {
			s := podStatus(ctx, l, pod)
			seen[s] = true
			return s == "ImagePullBackOff", s
		})
		if !seen["ErrImagePull"] && !strings.Contains(mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name="+pod), "Failed to pull image") {
			t.Errorf("%s: no ErrImagePull status or failed-pull event before the back-off", pod)
		}
	}
	// The back-off says what the last pull failed with, as the kubelet's since 1.32: here
	// the registry's 404, a NotFound from containerd's CRI plugin.
	want := fmt.Sprintf(`Back-off pulling image "%[1]s/lab/nope:v1": ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "%[1]s/lab/nope:v1": `, registry)
	if msg := mustKubectl(t, l, "get", "pod", "missing", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.message}"); !strings.HasPrefix(msg, want) {
		t.Errorf("missing's waiting message %q, want it to start %q", msg, want)
	}

	applyYAML(t, l, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: pulled}
spec:
  imagePullSecrets: [{name: regcred}]
  containers: [{name: app, image: %s}]
`, image))
	waitFor(t, "the pulled pod Running", 90*time.Second, func() (bool, string) {
		s := podStatus(ctx, l, "pulled")
		return s == "Running", s
	})
	events := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=pulled")
	if !strings.Contains(events, "Successfully pulled image") {
		t.Errorf("events of the pulled pod lack the pull:\n%s", events)
	}
}

const wgetPod = `apiVersion: v1
kind: Pod
metadata: {name: wget}
spec:
  nodeName: node-1
  containers:
  - name: wget
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'echo hello > /tmp/index.html && exec httpd -f -p 127.0.0.1:8080 -h /tmp']
`

// TestBusyboxWgetTimeout: `wget -T 2` in our busybox image, run as a program (as kubectl
// exec and exec probes do) and from `sh -c` (as scripts and `kubectl run -- sh -c` do),
// fetches, and fails cleanly (exit 1) on a closed port, instead of dying of a
// segmentation fault (139) as Debian's busybox applet does.
func TestBusyboxWgetTimeout(t *testing.T) {
	l := upLab(t, "e2e-wget", 1)
	ctx := context.Background()
	applyYAML(t, l, wgetPod)
	waitRunning(t, l, "wget")
	var out string
	waitFor(t, "wget -T 2 of the pod's own httpd", 30*time.Second, func() (bool, string) {
		out, _ = cluster.Kubectl(ctx, l, "exec", "wget", "--", "wget", "-T", "2", "-q", "-O", "-", "http://127.0.0.1:8080/index.html")
		return out == "hello\n", out
	})
	if out, err := cluster.Kubectl(ctx, l, "exec", "wget", "--", "sh", "-c", "wget -T 2 -qO- http://127.0.0.1:8080/index.html; echo exit=$?"); out != "hello\nexit=0\n" {
		t.Errorf("sh -c 'wget -T 2 ...': %v:\n%s\nwant hello, exit=0", err, out)
	}
	for _, command := range [][]string{
		{"wget", "-T", "2", "-q", "-O", "-", "http://127.0.0.1:1/"},
		{"sh", "-c", "wget -T 2 -qO- http://127.0.0.1:1/"},
	} {
		start := time.Now()
		out, err := cluster.Kubectl(ctx, l, append([]string{"exec", "wget", "--"}, command...)...)
		if err == nil || !strings.Contains(out, "exit code 1") || !strings.Contains(out, "refused") || time.Since(start) > 10*time.Second {
			t.Errorf("%q of a closed port: %v after %v:\n%s\nwant connection refused, exit code 1", command, err, time.Since(start), out)
		}
	}
}
