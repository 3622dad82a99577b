package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	e := requireEnv(t)
	ctx := context.Background()
	reg := runtimetest.StartRegistry(t, "lab", "s3cret")
	runtimetest.PushImage(t, cluster.ContainerdSocket(l), filepath.Join(e.imagesDir, "netexec.tar"), reg.Addr+"/lab/netexec:v1", "lab", "s3cret")
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
	status := func(name string) string {
		out, _ := cluster.Kubectl(ctx, l, "get", "pod", name, "--no-headers")
		if f := strings.Fields(out); len(f) > 2 {
			return f[2]
		}
		return out
	}
	for _, pod := range []string{"noauth", "missing"} {
		seen := map[string]bool{}
		waitFor(t, pod+" in ImagePullBackOff", 60*time.Second, func() (bool, string) {
			s := status(pod)
			seen[s] = true
			return s == "ImagePullBackOff", s
		})
		if !seen["ErrImagePull"] && !strings.Contains(mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name="+pod), "Failed to pull image") {
			t.Errorf("%s: no ErrImagePull status or failed-pull event before the back-off", pod)
		}
	}

	applyYAML(t, l, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: pulled}
spec:
  imagePullSecrets: [{name: regcred}]
  containers: [{name: app, image: %s}]
`, image))
	waitFor(t, "the pulled pod Running", 90*time.Second, func() (bool, string) {
		s := status("pulled")
		return s == "Running", s
	})
	events := mustKubectl(t, l, "get", "events", "--field-selector", "involvedObject.name=pulled")
	if !strings.Contains(events, "Successfully pulled image") {
		t.Errorf("events of the pulled pod lack the pull:\n%s", events)
	}
}
