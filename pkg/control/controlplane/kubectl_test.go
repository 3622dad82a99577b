package controlplane

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const appManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  labels: {app: shop}
data:
  color: blue
  size: large
---
apiVersion: v1
kind: Pod
metadata:
  name: shop
  labels: {app: shop}
spec:
  containers:
  - name: web
    image: localhost/minik8s/netexec:v1
    env: [{name: MODE, value: prod}]
`

// The everyday kubectl verbs against miniapi, as a user runs them.
func TestKubectlEverydayVerbs(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	out := c.mustKubectl(t, appManifest, "apply", "-f", "-")
	if !strings.Contains(out, "configmap/app-config created") || !strings.Contains(out, "pod/shop created") {
		t.Fatalf("apply of a multi-document manifest:\n%s", out)
	}

	// get in every output format
	var cm corev1.ConfigMap
	if err := json.Unmarshal([]byte(c.mustKubectl(t, "", "get", "cm", "app-config", "-o", "json")), &cm); err != nil || cm.Data["color"] != "blue" {
		t.Errorf("get -o json: %v %+v", err, cm.Data)
	}
	if out := c.mustKubectl(t, "", "get", "cm", "app-config", "-o", "yaml"); !strings.Contains(out, "color: blue") || !strings.Contains(out, "resourceVersion:") {
		t.Errorf("get -o yaml:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "get", "pod", "shop", "-o", "jsonpath={.spec.containers[0].env[0].value}"); out != "prod" {
		t.Errorf("jsonpath = %q", out)
	}
	if out := c.mustKubectl(t, "", "get", "pods", "-o", "wide", "--show-labels"); !regexpLine(out, `shop\s+0/1\s+Pending.*app=shop`) {
		t.Errorf("get -o wide --show-labels:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "get", "pods,cm", "-l", "app=shop", "-o", "name"); !strings.Contains(out, "pod/shop") || !strings.Contains(out, "configmap/app-config") {
		t.Errorf("get several kinds by label:\n%s", out)
	}

	// label and annotate, with --overwrite and removal
	c.mustKubectl(t, "", "label", "cm", "app-config", "tier=backend")
	c.mustKubectl(t, "", "annotate", "cm", "app-config", "owner=team-a")
	if _, err := c.kubectl(t, "", "label", "cm", "app-config", "tier=frontend"); err == nil {
		t.Errorf("relabel without --overwrite should fail")
	}
	c.mustKubectl(t, "", "label", "cm", "app-config", "tier=frontend", "--overwrite")
	c.mustKubectl(t, "", "annotate", "cm", "app-config", "owner-")
	got, _ := c.client.CoreV1().ConfigMaps("default").Get(ctx, "app-config", metav1.GetOptions{})
	if got.Labels["tier"] != "frontend" || got.Annotations["owner"] != "" {
		t.Errorf("labels %v annotations %v", got.Labels, got.Annotations)
	}

	// the three patch types
	c.mustKubectl(t, "", "patch", "cm", "app-config", "--type=merge", "-p", `{"data":{"size":"small"}}`)
	c.mustKubectl(t, "", "patch", "cm", "app-config", "--type=json", "-p", `[{"op":"add","path":"/data/shape","value":"round"}]`)
	c.mustKubectl(t, "", "patch", "pod", "shop", "-p", `{"spec":{"containers":[{"name":"web","image":"localhost/minik8s/busybox:v1"}]}}`)
	got, _ = c.client.CoreV1().ConfigMaps("default").Get(ctx, "app-config", metav1.GetOptions{})
	if got.Data["size"] != "small" || got.Data["shape"] != "round" || got.Data["color"] != "blue" {
		t.Errorf("after merge and json patches: %v", got.Data)
	}
	pod, _ := c.client.CoreV1().Pods("default").Get(ctx, "shop", metav1.GetOptions{})
	if pod.Spec.Containers[0].Image != "localhost/minik8s/busybox:v1" || len(pod.Spec.Containers[0].Env) != 1 {
		t.Errorf("strategic patch should change the image and keep env: %+v", pod.Spec.Containers[0])
	}
	if _, err := c.kubectl(t, "", "patch", "pod", "shop", "-p", `{"spec":{"restartPolicy":"Never"}}`); err == nil {
		t.Errorf("patching an immutable pod field should fail")
	}

	// apply again with a field dropped: the 3-way merge removes it
	dropped := strings.Replace(appManifest, "  size: large\n", "", 1)
	c.mustKubectl(t, dropped, "apply", "-f", "-")
	got, _ = c.client.CoreV1().ConfigMaps("default").Get(ctx, "app-config", metav1.GetOptions{})
	if _, still := got.Data["size"]; still {
		t.Errorf("apply should remove a key dropped from the manifest: %v", got.Data)
	}

	// replace with a stale resourceVersion conflicts
	stale := cm.DeepCopy()
	stale.Data["color"] = "red"
	stale.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	body, _ := json.Marshal(stale)
	out, err := c.kubectl(t, string(body), "replace", "-f", "-")
	if err == nil || !strings.Contains(out, "the object has been modified") {
		t.Errorf("replace with a stale resourceVersion should conflict: %v\n%s", err, out)
	}

	// dry-run=server validates and defaults but stores nothing
	out = c.mustKubectl(t, "", "create", "cm", "dry", "--from-literal=a=b", "--dry-run=server", "-o", "yaml")
	if !strings.Contains(out, "uid:") {
		t.Errorf("server dry run should return the object as it would be stored:\n%s", out)
	}
	if _, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("server dry run stored the object: %v", err)
	}

	// describe reads the object and its events
	if out := c.mustKubectl(t, "", "describe", "pod", "shop"); !regexpLine(out, `^Name:\s+shop`) || !regexpLine(out, `Image:\s+localhost/minik8s/netexec:v1`) ||
		!regexpLine(out, `Warning\s+FailedScheduling\s+.*default-scheduler\s+no nodes available to schedule pods`) {
		t.Errorf("describe pod:\n%s", out)
	}

	// delete: kubectl waits until the object is gone
	c.mustKubectl(t, "", "delete", "cm", "app-config")
	if _, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "app-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap still there after kubectl delete: %v", err)
	}
}

// kubectl get --watch prints the object, then each change as it happens.
func TestKubectlGetWatch(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.kubeconfig, "get", "cm", "-w", "--output-watch-events")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	next := func(want string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl get -w ended before %q", want)
				}
				if regexpLine(l, want) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("kubectl get -w: no line matching %q", want)
			}
		}
	}
	// With nothing to show yet, kubectl prints the header with the first event.
	c.mustKubectl(t, "", "create", "cm", "watched", "--from-literal=a=1")
	next(`^EVENT\s+NAME\s+DATA\s+AGE`)
	next(`^ADDED\s+watched\s+1\s`)
	c.mustKubectl(t, "", "patch", "cm", "watched", "--type=merge", "-p", `{"data":{"b":"2"}}`)
	next(`^MODIFIED\s+watched\s+2\s`)
	c.mustKubectl(t, "", "delete", "cm", "watched")
	next(`^DELETED\s+watched\s`)
}

// kubectl drain cordons a node and evicts its pods through the eviction subresource: a pod
// its PodDisruptionBudget protects stays (kubectl retries the 429 until its timeout), and
// goes once the budget allows a disruption.
func TestKubectlDrain(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	c.createReadyNode(t, "node-1", 10)
	for _, name := range []string{"free", "guarded"} {
		pod, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/netexec:v1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := c.client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	one := intstr.FromInt32(1)
	if _, err := c.client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The disruption controller keeps the budget's status: one healthy pod of one needed.
	waitBudget := func(allowed int32) {
		t.Helper()
		waitFor(t, fmt.Sprintf("the budget to allow %d disruptions", allowed), func() bool {
			pdb, err := c.client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{})
			return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == allowed
		})
	}
	waitBudget(0)

	out, err := c.kubectl(t, "", "drain", "node-1", "--force", "--grace-period=0", "--timeout=3s")
	if err == nil || !strings.Contains(out, "evicting pod default/free") || !strings.Contains(out, "violate the pod's disruption budget") {
		t.Fatalf("drain with a budget allowing nothing should evict the free pod and give up on the guarded one: %v\n%s", err, out)
	}
	node, _ := c.client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	_, freeErr := c.client.CoreV1().Pods("default").Get(ctx, "free", metav1.GetOptions{})
	_, guardedErr := c.client.CoreV1().Pods("default").Get(ctx, "guarded", metav1.GetOptions{})
	if !node.Spec.Unschedulable || !apierrors.IsNotFound(freeErr) || guardedErr != nil {
		t.Fatalf("after the first drain: node unschedulable %v, free pod %v, guarded pod %v", node.Spec.Unschedulable, freeErr, guardedErr)
	}

	c.mustKubectl(t, "", "patch", "pdb", "guard", "--type=merge", "-p", `{"spec":{"minAvailable":0}}`)
	waitBudget(1)
	if out := c.mustKubectl(t, "", "drain", "node-1", "--force", "--grace-period=0", "--timeout=10s"); !strings.Contains(out, "node/node-1 drained") {
		t.Fatalf("drain once the budget allows it:\n%s", out)
	}
	if _, err := c.client.CoreV1().Pods("default").Get(ctx, "guarded", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("guarded pod after the second drain: %v", err)
	}
}
