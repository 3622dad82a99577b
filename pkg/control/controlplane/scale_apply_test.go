package controlplane

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	autoscalingv1apply "k8s.io/client-go/applyconfigurations/autoscaling/v1"
)

// Server-side apply through the scale subresource (client-go's ApplyScale) is served as
// kube-apiserver serves it (apiserver's patch handler applying the Scale,
// registry/apps/deployment/storage's ScaleREST mapping its managed fields onto
// spec.replicas): a conflict with the Deployment's applier, Force taking spec.replicas,
// and the Deployment's next apply of other replicas conflicting with the scale's applier.
func TestServerSideApplyThroughScale(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	const deploy = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: busybox}]}
`
	eventually(t, c, "get", "deployments")
	c.mustKubectl(t, deploy, "apply", "--server-side", "-f", "-")

	deployments := c.client.AppsV1().Deployments("default")
	scale := autoscalingv1apply.Scale().WithSpec(autoscalingv1apply.ScaleSpec().WithReplicas(3))
	_, err := deployments.ApplyScale(ctx, "web", scale, metav1.ApplyOptions{FieldManager: "hpa"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "kubectl": .spec.replicas`) {
		t.Errorf("unforced apply to scale: %v", err)
	}
	if s, err := deployments.ApplyScale(ctx, "web", scale, metav1.ApplyOptions{FieldManager: "hpa", Force: true}); err != nil || s.Spec.Replicas != 3 {
		t.Fatalf("forced apply to scale: %v %+v", err, s)
	}
	out := c.mustKubectl(t, "", "get", "deployment", "web", "-o", `jsonpath={.spec.replicas} {range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource}/{.fieldsV1.f:spec.f:replicas}{" "}{end}`)
	if entries := strings.Fields(out); entries[0] != "3" || !slices.Contains(entries, "kubectl/Apply//") || !slices.Contains(entries, "hpa/Apply/scale/{}") {
		t.Errorf("after the forced apply to scale: %q", out)
	}
	out, err = c.kubectl(t, deploy, "apply", "--server-side", "-f", "-")
	if err == nil || !strings.Contains(out, `conflict with "hpa" with subresource "scale": .spec.replicas`) {
		t.Errorf("apply of other replicas to the deployment: %v\n%s", err, out)
	}
}
