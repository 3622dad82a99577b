package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

const proxiedApp = `apiVersion: v1
kind: Pod
metadata: {name: echo-pod, labels: {app: echo}}
spec:
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{name: web, containerPort: 8080}],
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}}]
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  selector: {app: echo}
  ports: [{name: http, port: 80, targetPort: web}]
---
` + nobodyService

// TestAPIServerProxy: kubectl get --raw reaches a pod and a service through miniapi's
// pods/proxy and services/proxy (as `kubectl proxy` users and the sig-network "Proxy
// version v1" conformance tests do): miniapi dials the pod from the control plane, by port
// number, by port name, with a scheme, GET and POST, the path and the query passed on; a
// service without endpoints is 503.
func TestAPIServerProxy(t *testing.T) {
	l := upLab(t, "apiproxy", 1)
	applyYAML(t, l, proxiedApp)
	mustKubectl(t, l, "wait", "--for=condition=Ready", "pod/echo-pod", "--timeout=120s")
	waitReadyEndpoints(t, l, "echo", 1)

	const ns = "/api/v1/namespaces/default/"
	for path, want := range map[string]string{
		ns + "pods/echo-pod/proxy/hostname":                "echo-pod", // the first container port
		ns + "pods/echo-pod:8080/proxy/echo?msg=by+number": "by number",
		ns + "pods/http:echo-pod:8080/proxy/hostname":      "echo-pod",
		ns + "services/echo:80/proxy/hostname":             "echo-pod",
		ns + "services/echo:http/proxy/echo?msg=by+name":   "by name",
		ns + "services/http:echo:http/proxy/hostname":      "echo-pod",
		ns + "services/echo/proxy/hostname":                "", // no unnamed port: 503
	} {
		out, err := cluster.Kubectl(context.Background(), l, "get", "--raw", path)
		if want == "" {
			if err == nil || !strings.Contains(out, "ServiceUnavailable") {
				t.Errorf("get --raw %s: %q %v, want 503", path, out, err)
			}
			continue
		}
		if err != nil || out != want {
			t.Errorf("get --raw %s: %q %v, want %q", path, out, err, want)
		}
	}

	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustKubectl(t, l, "create", "--raw", ns+"services/echo:80/proxy/echo?msg=posted", "-f", empty); out != "posted" {
		t.Errorf("POST through services/echo:80/proxy: %q", out)
	}

	out, err := cluster.Kubectl(context.Background(), l, "get", "--raw", ns+"services/nobody:80/proxy/")
	if err == nil || !strings.Contains(out, `ServiceUnavailable`) || !strings.Contains(out, `no endpoints available for service "nobody"`) {
		t.Errorf("services/nobody/proxy: %q %v, want 503 no endpoints available", out, err)
	}
	checkNoHostRoute(t)
}
