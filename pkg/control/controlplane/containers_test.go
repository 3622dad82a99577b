package controlplane

import (
	"strings"
	"testing"
)

// TestInvalidContainersAsKubectlShows: a pod or a Deployment whose containers kube's
// validateContainers refuses is refused here too, with kube-apiserver's words as kubectl
// prints them (before, they were accepted and failed on the node, or not at all).
func TestInvalidContainersAsKubectlShows(t *testing.T) {
	c := startCluster(t)
	for _, bad := range []struct{ yaml, want string }{
		{`apiVersion: v1
kind: Pod
metadata: {name: bad-env}
spec:
  containers:
  - name: app
    image: busybox
    env: [{name: "A=B", value: x}]
`, `The Pod "bad-env" is invalid: spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`},
		{`apiVersion: v1
kind: Pod
metadata: {name: bad-mounts}
spec:
  initContainers:
  - name: init
    image: busybox
    livenessProbe: {exec: {command: ["true"]}}
  containers:
  - name: app
    image: busybox
    volumeMounts: [{name: data, mountPath: /data}]
    readinessProbe: {periodSeconds: 5}
`, `The Pod "bad-mounts" is invalid: 
* spec.containers[0].volumeMounts[0].name: Not found: "data"
* spec.containers[0].readinessProbe: Required value: must specify a handler type
* spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`},
		{`apiVersion: apps/v1
kind: Deployment
metadata: {name: bad-template}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers:
      - name: app
        image: busybox
        imagePullPolicy: Sometimes
`, `The Deployment "bad-template" is invalid: spec.template.spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`},
	} {
		out, err := c.kubectl(t, bad.yaml, "create", "-f", "-")
		if err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("want %q, got %v\n%s", bad.want, err, out)
		}
	}
	// The fields the defaults fill (pull policy, probe thresholds, httpGet's path and
	// scheme) may be left out.
	c.mustKubectl(t, `apiVersion: v1
kind: Pod
metadata: {name: good}
spec:
  containers:
  - name: app
    image: busybox
    livenessProbe: {httpGet: {port: 8080}}
    lifecycle: {preStop: {sleep: {seconds: 0}}}
`, "create", "-f", "-")
}
