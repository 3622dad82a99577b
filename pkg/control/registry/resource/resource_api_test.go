package resource_test

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestResourceAPI: miniapi serves resource.k8s.io/v1 as the DRA CRUD conformance tests use
// it: create, get, list, update, patch, status and delete of the four kinds; an invalid
// claim is refused with kube's message and a claim's spec does not change.
func TestResourceAPI(t *testing.T) {
	ctx := context.Background()
	c := controlplanetest.Start(t, nil)
	api := c.Client.ResourceV1()
	opts := metav1.CreateOptions{}

	class, err := api.DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "dra.example.com"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "false"}}}}}, opts)
	if err != nil {
		t.Fatalf("create class: %v", err)
	}
	class.Spec.Selectors[0].CEL.Expression = "1 == 0"
	if class, err = api.DeviceClasses().Update(ctx, class, metav1.UpdateOptions{}); err != nil || class.Generation != 2 {
		t.Fatalf("update class: generation %d, %v", class.Generation, err)
	}

	spec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "req-0", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "dra.example.com"}}}}}
	claims := api.ResourceClaims("default")
	claim, err := claims.Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: spec,
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{}}}, opts)
	if err != nil {
		t.Fatalf("create claim: %v", err)
	}
	if claim.Status.Allocation != nil || claim.Spec.Devices.Requests[0].Exactly.Count != 1 {
		t.Errorf("created claim: status %+v, request %+v", claim.Status, claim.Spec.Devices.Requests[0].Exactly)
	}
	changed := claim.DeepCopy()
	changed.Spec.Devices.Requests[0].Exactly.DeviceClassName = "other.example.com"
	if _, err := claims.Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Invalid value") ||
		!strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("a claim's spec changed: %v", err)
	}
	if claim, err = claims.Patch(ctx, "gpu", types.StrategicMergePatchType, []byte(`{"metadata": {"labels": {"test.dra.example.com": "test"}}}`), metav1.PatchOptions{}); err != nil ||
		claim.Labels["test.dra.example.com"] != "test" {
		t.Fatalf("patch claim labels: %v", err)
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{}
	claim.Labels["status"] = "ignored"
	if claim, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil || claim.Status.Allocation == nil || claim.Labels["status"] != "" {
		t.Fatalf("update claim status: %+v, labels %v, %v", claim.Status, claim.Labels, err)
	}
	if claim, err = claims.Patch(ctx, "gpu", types.JSONPatchType, []byte(`[{"op": "add", "path": "/status/reservedFor", "value": [{"resource": "pods", "name": "p", "uid": "1"}]}]`),
		metav1.PatchOptions{}, "status"); err != nil || len(claim.Status.ReservedFor) != 1 {
		t.Fatalf("patch claim status: %v", err)
	}

	apply := func(body string, sub ...string) (*resourcev1.ResourceClaim, error) {
		return claims.Patch(ctx, "gpu", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "test", Force: ptr.To(true)}, sub...)
	}
	if claim, err = apply(`{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu", "labels": {"applied": "yes"}}}`); err != nil ||
		claim.Labels["applied"] != "yes" {
		t.Fatalf("apply claim labels: %v", err)
	}
	if _, err = apply(`{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu"}, "status": {"allocation": {}}}`, "status"); err != nil {
		t.Fatalf("apply claim status: %v", err)
	}
	_, err = claims.Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "req-0"}}}}}, opts)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required") {
		t.Errorf("a request of neither kind: %v", err)
	}

	templates := api.ResourceClaimTemplates("default")
	if _, err := templates.Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Labels: map[string]string{"app": "x"}},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: spec}}, opts); err != nil {
		t.Fatalf("create template: %v", err)
	}
	if list, err := templates.List(ctx, metav1.ListOptions{LabelSelector: "app=x"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("list templates: %v", err)
	}

	slices := api.ResourceSlices()
	for _, node := range []string{"node-1", "node-2"} {
		if _, err := slices.Create(ctx, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "dra.example.com", NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}, opts); err != nil {
			t.Fatalf("create slice: %v", err)
		}
	}
	list, err := slices.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-2,spec.driver=dra.example.com"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "node-2-gpu" {
		t.Fatalf("slices of node-2: %v, %v", list, err)
	}
	if _, err := slices.Patch(ctx, "node-1-gpu", types.MergePatchType, []byte(`{"spec": {"nodeName": "node-3"}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a slice moved to another node: %v", err)
	}

	if err := claims.Delete(ctx, "gpu", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := slices.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, err := slices.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("slices left after deletecollection: %v, %v", list, err)
	}
}

const resourceObjects = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu, namespace: default}
spec:
  devices:
    requests:
    - name: req-0
      exactly: {deviceClassName: dra.example.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: dra.example.com
  nodeName: node-1
  pool: {name: pool-a, generation: 1, resourceSliceCount: 1}
`

// TestResourceKubectl: kubectl shows a claim's state and a slice's node, driver and pool.
func TestResourceKubectl(t *testing.T) {
	testenv.RequireTools(t, "kubectl")
	c := controlplanetest.Start(t, nil)
	c.MustKubectl(t, resourceObjects, "apply", "-f", "-")
	for args, want := range map[string]string{"resourceclaims": "NAME STATE AGE gpu pending", "resourceslices": "NAME NODE DRIVER POOL AGE node-1-gpu node-1 dra.example.com pool-a"} {
		got := strings.Join(strings.Fields(c.MustKubectl(t, "", "get", args)), " ")
		if !strings.HasPrefix(got, want) {
			t.Errorf("kubectl get %s: %q, want %q...", args, got, want)
		}
	}
}
