package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// ssaDeployment is a deployment of no pods, for server-side apply's field ownership alone.
const ssaDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: owned}
spec:
  replicas: 0
  selector: {matchLabels: {app: owned}}
  template:
    metadata: {labels: {app: owned}}
    spec: {containers: [{name: c, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}]}
`

// TestServerSideApplyWithKubectl: what kubectl prints of server-side apply as against
// kube-apiserver 1.36: `kubectl scale` takes spec.replicas from the applier through the
// scale subresource, so re-applying other replicas conflicts naming it, until
// --force-conflicts; a field outside the schema is kube's typed-patch error.
func TestServerSideApplyWithKubectl(t *testing.T) {
	l := upLab(t, "ssa", 1)
	ctx := context.Background()
	manifest := writeManifest(t, ssaDeployment)
	mustKubectl(t, l, "apply", "--server-side", "-f", manifest)
	mustKubectl(t, l, "scale", "deployment", "owned", "--replicas=1")

	out, err := cluster.Kubectl(ctx, l, "apply", "--server-side", "-f", manifest)
	if want := `Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas`; err == nil || !strings.Contains(out, want) {
		t.Errorf("re-apply after kubectl scale: %v\n%s\nwant %q", err, out, want)
	}
	mustKubectl(t, l, "apply", "--server-side", "--force-conflicts", "-f", manifest)
	if got := mustKubectl(t, l, "get", "deployment", "owned", "-o", "jsonpath={.spec.replicas}"); got != "0" {
		t.Errorf("forced apply: replicas %q, want 0", got)
	}

	out, err = cluster.Kubectl(ctx, l, "apply", "--server-side", "-f", writeManifest(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: odd}\nfoo: bar\n"))
	if want := "Error from server (BadRequest): failed to create typed patch object (default/odd; /v1, Kind=ConfigMap): .foo: field not declared in schema"; err == nil || !strings.Contains(out, want) {
		t.Errorf("apply of an unknown field: %v\n%s\nwant %q", err, out, want)
	}
}
