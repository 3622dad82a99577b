package controlplane

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// A custom resource's scale writes own the field its specReplicasPath names, as
// apiextensions-apiserver's ScaleREST maps them (registry/customresource/etcd.go, with the
// replicas paths of all the CRD's versions from customresource_handler.go): `kubectl scale`
// takes .spec.size from the applier, an entry made through another version is kept, and
// server-side apply through scale conflicts as for built-in kinds.
func TestCustomResourceScaleOwnsReplicas(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	c.applyCRD(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pumps.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: pumps, singular: pump, kind: Pump, listKind: PumpList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}}
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}, status: {type: object, properties: {size: {type: integer}}}}}}
  - name: v2
    served: true
    storage: false
    subresources: {scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}}
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}, status: {type: object, properties: {size: {type: integer}}}}}}
`, "pumps.example.com")
	eventually(t, c, "get", "pumps.v1.example.com")
	eventually(t, c, "get", "pumps.v2.example.com")
	const pump = "apiVersion: example.com/v1\nkind: Pump\nmetadata: {name: p1, namespace: default}\nspec: {size: 1}\n"
	c.mustKubectl(t, pump, "apply", "--server-side", "-f", "-")
	c.mustKubectl(t, "apiVersion: example.com/v2\nkind: Pump\nmetadata: {name: p1, namespace: default}\nspec: {color: red}\n",
		"apply", "--server-side", "--field-manager=painter", "-f", "-")

	// kubectl scales through the preferred version, v2.
	c.mustKubectl(t, "", "scale", "pump/p1", "--replicas=4")
	entries := func(want ...string) {
		t.Helper()
		out := c.mustKubectl(t, "", "get", "pumps.v1.example.com", "p1", "-o",
			`jsonpath={.spec.size} {range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource}/{.apiVersion}/{.fieldsV1.f:spec.f:size}{" "}{end}`)
		got := strings.Fields(out)
		slices.Sort(got[1:])
		if !slices.Equal(got, want) {
			t.Errorf("size and managed fields: %q, want %q", got, want)
		}
	}
	// The applier owned nothing else: its entry goes.
	entries("4", "kubectl/Update/scale/example.com/v2/{}", "painter/Apply//example.com/v2/")
	out, err := c.kubectl(t, pump, "apply", "--server-side", "-f", "-")
	if err == nil || !strings.Contains(out, `conflict with "kubectl" with subresource "scale" using example.com/v2: .spec.size`) {
		t.Errorf("apply of another size: %v\n%s", err, out)
	}

	pumps := customResources(c.adminConfig(t), "example.com", "v1", "pumps")
	scale := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": "p1"}, "spec": map[string]any{"replicas": int64(2)}}}
	_, err = pumps.Apply(ctx, "p1", scale, metav1.ApplyOptions{FieldManager: "hpa"}, "scale")
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "kubectl" with subresource "scale" using autoscaling/v1: .spec.replicas`) {
		t.Errorf("unforced apply to scale: %v", err)
	}
	if _, err := pumps.Apply(ctx, "p1", scale, metav1.ApplyOptions{FieldManager: "hpa", Force: true}, "scale"); err != nil {
		t.Fatalf("forced apply to scale: %v", err)
	}
	// Through v1 now: painter's entry of v2 is kept.
	entries("2", "hpa/Apply/scale/example.com/v1/{}", "painter/Apply//example.com/v2/")
}
