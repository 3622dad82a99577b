package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

func cpuMem(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// TestPodResize: pods/NAME/resize changes a pod's CPU and memory in place, as
// kube-apiserver's podResizeStrategy: one more generation, nothing but the containers'
// resources taken from the request, the same pod read back through the
// subresource, and the resizes Kubernetes refuses refused with its messages (the
// "Pod InPlace Resize" conformance tests and their invalid-patch table).
func TestPodResize(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, pods := context.Background(), c.Client.CoreV1().Pods(c.Namespace)
	guaranteed := corev1.ResourceRequirements{Requests: cpuMem("20m", "35Mi"), Limits: cpuMem("20m", "35Mi")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rs", Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{
			{Name: "c1", Image: "busybox", Resources: guaranteed},
			{Name: "c2", Image: "busybox", Resources: guaranteed},
		}}}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := func(resources *corev1.ResourceRequirements) {
		t.Helper()
		got, err := pods.Get(ctx, "rs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Status.ContainerStatuses = nil
		for _, c := range got.Spec.Containers {
			got.Status.ContainerStatuses = append(got.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Resources: resources})
		}
		if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A node that reports no resources of a running container cannot resize it.
	running(nil)
	up := `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"25m","memory":"40Mi"},"limits":{"cpu":"25m","memory":"40Mi"}}}]}}`
	if _, err := pods.Patch(ctx, "rs", types.StrategicMergePatchType, []byte(up), metav1.PatchOptions{}, "resize"); err == nil ||
		!strings.Contains(err.Error(), "Pod running on node without support for resize") {
		t.Fatalf("resize on a node without support: %v", err)
	}
	running(&guaranteed)

	// Only the resources and resizePolicy of the request count.
	withMore := `{"metadata":{"labels":{"a":"2"}},"spec":{"activeDeadlineSeconds":5,"containers":[{"name":"c1","image":"nginx",` +
		`"resources":{"requests":{"cpu":"25m","memory":"40Mi"},"limits":{"cpu":"25m","memory":"40Mi"}}}]}}`
	got, err := pods.Patch(ctx, "rs", types.StrategicMergePatchType, []byte(withMore), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	c1 := got.Spec.Containers[0]
	if !equality.Semantic.DeepEqual(c1.Resources.Limits, cpuMem("25m", "40Mi")) || !equality.Semantic.DeepEqual(c1.Resources.Requests, cpuMem("25m", "40Mi")) {
		t.Errorf("c1 after the resize: %+v", c1.Resources)
	}
	if c1.Image != "busybox" || got.Labels["a"] != "1" || got.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("the resize changed more than resources: image %q, labels %v, activeDeadlineSeconds %v", c1.Image, got.Labels, got.Spec.ActiveDeadlineSeconds)
	}
	if got.Generation != created.Generation+1 {
		t.Errorf("generation %d after a resize of a pod at %d", got.Generation, created.Generation)
	}
	if !equality.Semantic.DeepEqual(got.Status, func() corev1.PodStatus { p, _ := pods.Get(ctx, "rs", metav1.GetOptions{}); return p.Status }()) {
		t.Error("the resize changed the status")
	}

	// The replace endpoint, and the pod read through the subresource.
	got.Spec.Containers[1].Resources = corev1.ResourceRequirements{Requests: cpuMem("15m", "30Mi"), Limits: cpuMem("15m", "30Mi")}
	if got, err = pods.UpdateResize(ctx, "rs", got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.Generation != created.Generation+2 || got.Spec.Containers[1].Resources.Limits.Cpu().String() != "15m" {
		t.Errorf("after UpdateResize: generation %d, c2 %+v", got.Generation, got.Spec.Containers[1].Resources)
	}
	dyn := dynamic.NewForConfigOrDie(c.Config)
	u, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(c.Namespace).Get(ctx, "rs", metav1.GetOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	if u.GetResourceVersion() != got.ResourceVersion || u.GetKind() != "Pod" {
		t.Errorf("pods/rs/resize: %s %s, want the pod at %s", u.GetKind(), u.GetResourceVersion(), got.ResourceVersion)
	}

	// The main resource still refuses a change of resources.
	got.Spec.Containers[0].Resources.Limits = cpuMem("30m", "40Mi")
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); err == nil {
		t.Error("an update of the pod changed its resources")
	}

	burstable := pod.DeepCopy()
	burstable.Name, burstable.Spec.Containers = "bu", []corev1.Container{{Name: "c1", Image: "busybox",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("35Mi")}}}}
	if _, err := pods.Create(ctx, burstable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, pod, patch, want string }{
		{"QoS class changes", "rs", `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"10m"}}}]}}`,
			"Pod QOS Class may not change as a result of resizing"},
		{"limits removed", "rs", `{"spec":{"containers":[{"name":"c1","resources":{"limits":{"cpu":null,"memory":null}}}]}}`,
			"resource limits cannot be removed"},
		{"requests removed", "bu", `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"memory":null}}}]}}`,
			"resource requests cannot be removed"},
		{"ephemeral storage", "rs", `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"ephemeral-storage":"1Gi"},"limits":{"ephemeral-storage":"1Gi"}}}]}}`,
			"only cpu and memory resources are mutable"},
		{"reordered", "rs", `{"spec":{"$setElementOrder/containers":[{"name":"c2"},{"name":"c1"}]}}`,
			"spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize, spec.containers[1].name: Forbidden: containers may not be renamed or reordered on resize"},
	} {
		_, err := pods.Patch(ctx, tc.pod, types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "resize")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// plrPod is the manifest of a pod named name, bound to node, with pod-level resources.
func plrPod(name, node string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeName: %s
  resources:
    requests: {cpu: 100m, memory: 64Mi}
    limits: {cpu: 200m, memory: 128Mi}
  containers:
  - {name: c1, image: busybox, resources: {requests: {cpu: 50m}}}
`, name, node)
}

// createNodeDeclaring registers a node (named after the test's namespace, so reruns do not
// collide) whose status declares features, as a minilet publishes them.
func createNodeDeclaring(t *testing.T, c *controlplanetest.Cluster, name string, features ...string) string {
	t.Helper()
	ctx, name := context.Background(), c.Namespace+"-"+name
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The node IPAM controller writes a new node's podCIDR meanwhile: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.DeclaredFeatures = features
		_, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// TestPodLevelResourcesResizeKubectl: the real kubectl resizes a pod's pod-level
// resources through pods/resize (kube 1.36, InPlacePodLevelResourcesVerticalScaling on),
// one more generation, on a node declaring that feature; a removal is refused with kube's
// message, and a plain patch of spec.resources stays refused as any pod update outside
// its mutable fields. On a node declaring nothing, NodeDeclaredFeatureValidator refuses
// the resize in kube's words.
func TestPodLevelResourcesResizeKubectl(t *testing.T) {
	c := controlplanetest.Shared(t)
	bare := createNodeDeclaring(t, c, "plr-bare")
	capable := createNodeDeclaring(t, c, "plr-capable", "InPlacePodLevelResourcesVerticalScaling")
	c.MustKubectl(t, plrPod("plr", capable), "apply", "-f", "-")
	c.MustKubectl(t, plrPod("plr-bare", bare), "apply", "-f", "-")
	// The admission plugin reads nodes from an informer: wait until it has seen the
	// capable node's features (and so the bare node, written before).
	var out string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		out, err = c.Kubectl(t, "", "patch", "pod", "plr", "--subresource", "resize", "--type", "merge",
			"-p", `{"spec":{"resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m","memory":"256Mi"}}}}`)
		return err == nil, nil
	})
	if err != nil || !strings.Contains(out, "pod/plr patched") {
		t.Errorf("kubectl patch --subresource resize: %v %s", err, out)
	}
	out, err = c.Kubectl(t, "", "patch", "pod", "plr-bare", "--subresource", "resize", "--type", "merge",
		"-p", `{"spec":{"resources":{"requests":{"cpu":"150m"}}}}`)
	want := fmt.Sprintf(`pods "plr-bare" is forbidden: pod update requires features InPlacePodLevelResourcesVerticalScaling which are not available on node %q`, bare)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("resize on a node declaring nothing: %v %s, want %q", err, out, want)
	}
	got := c.MustKubectl(t, "", "get", "pod", "plr", "-o", "jsonpath={.metadata.generation} {.spec.resources.requests.cpu} {.spec.resources.limits.cpu} {.spec.resources.limits.memory}")
	if got != "2 150m 300m 256Mi" {
		t.Errorf("generation and pod-level resources after the resize: %q, want \"2 150m 300m 256Mi\"", got)
	}
	for _, tc := range []struct{ name, subresource, patch, want string }{
		{"limit removed", "resize", `{"spec":{"resources":{"limits":{"memory":null}}}}`,
			"spec.resources.limits: Forbidden: pod-level resource limits cannot be removed"},
		{"plain patch", "", `{"spec":{"resources":{"requests":{"cpu":"200m"}}}}`,
			"spec: Forbidden: pod updates may not change fields other than"},
	} {
		out, err := c.Kubectl(t, "", "patch", "pod", "plr", "--subresource", tc.subresource, "--type", "merge", "-p", tc.patch)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %v %s, want %q", tc.name, err, out, tc.want)
		}
	}
}

// initPod is the manifest of a pod named name, bound to node, with a non-sidecar init container.
func initPod(name, node string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeName: %s
  initContainers:
  - {name: init, image: busybox, resources: {requests: {cpu: 50m, memory: 32Mi}}}
  containers:
  - {name: c1, image: busybox}
`, name, node)
}

// TestInitContainerResizeKubectl: kubectl resizes a non-sidecar init container through
// pods/resize (kube 1.36, InPlacePodVerticalScalingInitContainers on), one more generation,
// on a node declaring that feature; on a node declaring nothing NodeDeclaredFeatureValidator
// refuses it in kube's words.
func TestInitContainerResizeKubectl(t *testing.T) {
	c := controlplanetest.Shared(t)
	bare := createNodeDeclaring(t, c, "init-bare")
	capable := createNodeDeclaring(t, c, "init-capable", "InPlacePodVerticalScalingInitContainers")
	c.MustKubectl(t, initPod("ir", capable), "apply", "-f", "-")
	c.MustKubectl(t, initPod("ir-bare", bare), "apply", "-f", "-")
	patch := `{"spec":{"initContainers":[{"name":"init","resources":{"requests":{"cpu":"80m","memory":"48Mi"}}}]}}`
	// The admission plugin reads nodes from an informer: wait until it has seen the capable node.
	var out string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		out, err = c.Kubectl(t, "", "patch", "pod", "ir", "--subresource", "resize", "--type", "strategic", "-p", patch)
		return err == nil, nil
	})
	if err != nil || !strings.Contains(out, "pod/ir patched") {
		t.Errorf("kubectl patch --subresource resize: %v %s", err, out)
	}
	got := c.MustKubectl(t, "", "get", "pod", "ir", "-o", "jsonpath={.metadata.generation} {.spec.initContainers[0].resources.requests.cpu} {.spec.initContainers[0].resources.requests.memory}")
	if got != "2 80m 48Mi" {
		t.Errorf("generation and init container requests after the resize: %q, want \"2 80m 48Mi\"", got)
	}
	out, err = c.Kubectl(t, "", "patch", "pod", "ir-bare", "--subresource", "resize", "--type", "strategic", "-p", patch)
	want := fmt.Sprintf(`pods "ir-bare" is forbidden: pod update requires features InPlacePodVerticalScalingInitContainers which are not available on node %q`, bare)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("resize on a node declaring nothing: %v %s, want %q", err, out, want)
	}
}
