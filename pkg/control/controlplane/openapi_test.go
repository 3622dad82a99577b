package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// kubectlBinDir holds kubectl.1.27 ... kubectl.1.33 beside the default kubectl.
const kubectlBinDir = "/usr/lib/google-cloud-sdk/bin"

// kubectlVersions are the kubectl binaries to check: the default one, and the oldest and
// newest supported versions where installed.
func kubectlVersions(t *testing.T) map[string]string {
	t.Helper()
	bins := map[string]string{}
	if path, err := exec.LookPath("kubectl"); err == nil {
		bins["default"] = path
	}
	for _, v := range []string{"1.27", "1.33"} {
		path := filepath.Join(kubectlBinDir, "kubectl."+v)
		if _, err := os.Stat(path); err == nil {
			bins[v] = path
		}
	}
	if len(bins) == 0 {
		testenv.Missing(t, "kubectl is not on PATH")
	}
	return bins
}

const validatedManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings-VERSION
data:
  mode: fast
---
apiVersion: v1
kind: Pod
metadata:
  name: app-VERSION
spec:
  containers:
  - name: web
    image: localhost/minik8s/netexec:v1
    ports: [{containerPort: 8080}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: lock-VERSION
spec:
  holderIdentity: me
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-VERSION
spec:
  replicas: 0
  selector: {matchLabels: {app: web-VERSION}}
  template:
    metadata: {labels: {app: web-VERSION}}
    spec:
      containers: [{name: web, image: localhost/minik8s/netexec:v1}]
`

const podWithUnknownField = `apiVersion: v1
kind: Pod
metadata:
  name: typo-VERSION
spec:
  foo: bar
  containers:
  - name: web
    image: localhost/minik8s/netexec:v1
`

// kubectl validates manifests (the default --validate=strict) through the server's field
// validation, which it finds announced in /openapi/v3, and explains every served kind.
func TestKubectlValidationAndExplain(t *testing.T) {
	c := startCluster(t)
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for version, bin := range kubectlVersions(t) {
		t.Run(version, func(t *testing.T) {
			name := strings.ReplaceAll(version, ".", "-")
			out, err := c.kubectlAt(t, bin, strings.ReplaceAll(validatedManifest, "VERSION", name), "apply", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl apply with validation: %v\n%s", err, out)
			}
			for _, want := range []string{"configmap/settings-" + name + " created", "pod/app-" + name + " created", "lease.coordination.k8s.io/lock-" + name + " created", "deployment.apps/web-" + name + " created"} {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl apply output lacks %q:\n%s", want, out)
				}
			}

			out, err = c.kubectlAt(t, bin, strings.ReplaceAll(podWithUnknownField, "VERSION", name), "apply", "-f", "-")
			if err == nil || !strings.Contains(out, `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.foo"`) {
				t.Errorf("kubectl apply of an unknown field should fail naming it: %v\n%s", err, out)
			}
			if _, err := c.client.CoreV1().Pods("default").Get(context.Background(), "typo-"+name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the refused pod was stored: %v", err)
			}

			out, err = c.kubectlAt(t, bin, "", "explain", "pod.spec.containers")
			if err != nil || !strings.Contains(out, "KIND:") || !strings.Contains(out, "Pod") || !strings.Contains(out, "FIELD: containers") || !strings.Contains(out, "imagePullPolicy") {
				t.Errorf("kubectl explain pod.spec.containers: %v\n%s", err, out)
			}
			out, err = c.kubectlAt(t, bin, "", "explain", "pods.spec", "--output=plaintext-openapiv2")
			if err != nil || !strings.Contains(out, "RESOURCE: spec") || !strings.Contains(out, "containers") {
				t.Errorf("kubectl explain from /openapi/v2: %v\n%s", err, out)
			}
			// Every served kind with the default kubectl; the oldest and newest explain
			// deployments (or, while apps/v1 is not served, the last kind registered).
			resources := reg.Resources()
			if version != "default" {
				resources = resources[len(resources)-1:]
				if d, ok := reg.Lookup(appsv1.SchemeGroupVersion.WithResource("deployments")); ok {
					resources = []*registry.Resource{d}
				}
			}
			for _, res := range resources {
				out, err := c.kubectlAt(t, bin, "", "explain", res.Resource, "--api-version="+res.GroupVersion().String())
				if err != nil || !strings.Contains(out, "KIND:       "+res.Kind) || !strings.Contains(out, "metadata") {
					t.Errorf("kubectl explain %s: %v\n%s", res.GroupVersionResource, err, out)
				}
			}
		})
	}
}

func TestOpenAPIDocuments(t *testing.T) {
	c := startCluster(t)
	hc := c.httpClient(t)

	resp, body := c.getAccept(t, hc, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json")
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(resp.Header.Get("Content-Type"), "+protobuf") || len(body) == 0 {
		t.Errorf("/openapi/v2 as protobuf: %d %s (%d bytes)", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	resp, body = c.getAccept(t, hc, "/openapi/v2", "application/json")
	var v2 struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(body, &v2); resp.StatusCode != http.StatusOK || err != nil || v2.Definitions["io.k8s.api.core.v1.Pod"] == nil {
		t.Errorf("/openapi/v2 as JSON: %d %v, Pod defined: %v", resp.StatusCode, err, v2.Definitions["io.k8s.api.core.v1.Pod"] != nil)
	}

	resp, body = c.getAccept(t, hc, "/openapi/v3", "application/json")
	var root struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &root); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("/openapi/v3: %d %v", resp.StatusCode, err)
	}
	for _, gv := range []string{"api/v1", "apis/coordination.k8s.io/v1"} {
		url := root.Paths[gv].URL
		if !strings.HasPrefix(url, "/openapi/v3/"+gv+"?hash=") {
			t.Errorf("/openapi/v3 lists %s at %q", gv, url)
			continue
		}
		resp, body = c.getAccept(t, hc, url, "application/json")
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"x-kubernetes-group-version-kind"`)) || !bytes.Contains(body, []byte(`"fieldValidation"`)) {
			t.Errorf("GET %s: %d, %d bytes", url, resp.StatusCode, len(body))
		}
	}
	if resp, _ := c.getAccept(t, hc, "/openapi/v3/apis/nope/v1", "application/json"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown group version: %d, want 404", resp.StatusCode)
	}
}

const appliedConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  labels: {team: a}
data:
  a: "1"
  b: "2"
`

// Server-side apply with real kubectl: create, prune by re-applying, conflicts between
// managers and forcing them, managed fields on show.
func TestKubectlServerSideApply(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	cms := c.client.CoreV1().ConfigMaps("default")

	out := c.mustKubectl(t, appliedConfig, "apply", "--server-side", "-f", "-")
	if !strings.Contains(out, "configmap/cfg serverside-applied") {
		t.Fatalf("apply --server-side:\n%s", out)
	}
	cm, err := cms.Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil || cm.Data["a"] != "1" || cm.Data["b"] != "2" || cm.Labels["team"] != "a" {
		t.Fatalf("applied configmap: %v %+v", err, cm)
	}
	if m := managerEntry(cm, "kubectl"); m == nil || m.Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("kubectl should manage cfg by Apply: %+v", cm.ManagedFields)
	}

	// Re-applying the same configuration changes nothing, not even the resourceVersion.
	c.mustKubectl(t, appliedConfig, "apply", "--server-side", "-f", "-")
	if again, _ := cms.Get(ctx, "cfg", metav1.GetOptions{}); again.ResourceVersion != cm.ResourceVersion {
		t.Errorf("a no-op apply wrote a new resourceVersion: %s -> %s", cm.ResourceVersion, again.ResourceVersion)
	}

	// Dropping a field from the configuration removes it.
	c.mustKubectl(t, strings.Replace(appliedConfig, "  b: \"2\"\n", "", 1), "apply", "--server-side", "-f", "-")
	if cm, _ = cms.Get(ctx, "cfg", metav1.GetOptions{}); cm.Data["b"] != "" || cm.Data["a"] != "1" {
		t.Errorf("re-apply without b should remove it: %+v", cm.Data)
	}

	// Another manager may not take a field kubectl owns without forcing.
	other := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: \"9\"}\n"
	out, err = c.kubectl(t, other, "apply", "--server-side", "--field-manager=other", "-f", "-")
	if err == nil || !strings.Contains(out, "conflict") || !strings.Contains(out, `"kubectl"`) || !strings.Contains(out, ".data.a") {
		t.Errorf("conflicting apply should fail naming manager and field: %v\n%s", err, out)
	}
	out = c.mustKubectl(t, other, "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-")
	if !strings.Contains(out, "serverside-applied") {
		t.Errorf("forced apply:\n%s", out)
	}
	if cm, _ = cms.Get(ctx, "cfg", metav1.GetOptions{}); cm.Data["a"] != "9" || managerEntry(cm, "other") == nil {
		t.Errorf("forced apply should win: %+v %+v", cm.Data, cm.ManagedFields)
	}

	out = c.mustKubectl(t, "", "get", "configmap", "cfg", "-o", "yaml", "--show-managed-fields")
	for _, want := range []string{"managedFields:", "manager: kubectl", "manager: other", "operation: Apply", "f:data:"} {
		if !strings.Contains(out, want) {
			t.Errorf("get --show-managed-fields lacks %q:\n%s", want, out)
		}
	}

	// Fields outside the schema are refused, naming the field.
	out, err = c.kubectl(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\nfoo: bar\n", "apply", "--server-side", "-f", "-")
	if err == nil || !strings.Contains(out, ".foo: field not declared in schema") {
		t.Errorf("apply with an unknown field: %v\n%s", err, out)
	}

	// A server-side applied pod is defaulted and validated like a created one.
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: ssa}\nspec:\n  containers: [{name: c, image: localhost/minik8s/netexec:v1}]\n"
	c.mustKubectl(t, pod, "apply", "--server-side", "-f", "-")
	p, err := c.client.CoreV1().Pods("default").Get(ctx, "ssa", metav1.GetOptions{})
	if err != nil || p.Spec.RestartPolicy != corev1.RestartPolicyAlways || p.Status.Phase != corev1.PodPending {
		t.Errorf("applied pod: %v %+v %+v", err, p.Spec.RestartPolicy, p.Status.Phase)
	}
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ssa}\nspec:\n  replicas: 0\n  selector: {matchLabels: {app: ssa}}\n" +
		"  template:\n    metadata: {labels: {app: ssa}}\n    spec: {containers: [{name: c, image: localhost/minik8s/netexec:v1}]}\n"
	c.mustKubectl(t, deploy, "apply", "--server-side", "-f", "-")
	c.mustKubectl(t, strings.Replace(deploy, "replicas: 0", "replicas: 1", 1), "apply", "--server-side", "-f", "-")
	d, err := c.client.AppsV1().Deployments("default").Get(ctx, "ssa", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || managerEntry(d, "kubectl") == nil {
		t.Errorf("applied deployment: %v %+v", err, d)
	}
	out = c.mustKubectl(t, pod, "apply", "--server-side", "--dry-run=server", "-f", "-")
	if !strings.Contains(out, "(server dry run)") {
		t.Errorf("dry-run apply: %s", out)
	}

	// Ordinary writes record Update entries: kubectl's named managers, client-go's
	// User-Agent program name.
	c.mustKubectl(t, "", "create", "configmap", "plain", "--from-literal=k=v")
	if cm, _ = cms.Get(ctx, "plain", metav1.GetOptions{}); managerEntry(cm, "kubectl-create") == nil || managerEntry(cm, "kubectl-create").Operation != metav1.ManagedFieldsOperationUpdate {
		t.Errorf("kubectl create should record kubectl-create/Update: %+v", cm.ManagedFields)
	}
	cfg := c.adminConfig(t)
	cfg.UserAgent = "shop-controller/v1.2 (linux/amd64)"
	shop := kubernetes.NewForConfigOrDie(cfg)
	cm.Data["k"] = "w"
	if cm, err = shop.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := managerEntry(cm, "shop-controller"); m == nil || m.Operation != metav1.ManagedFieldsOperationUpdate || !strings.Contains(string(m.FieldsV1.Raw), `"f:k"`) {
		t.Errorf("client-go update should record shop-controller owning data.k: %+v", cm.ManagedFields)
	}
}

// client-go's typed Apply (apply configurations), including the status subresource.
func TestClientGoApply(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	cms := c.client.CoreV1().ConfigMaps("default")

	mine := applycorev1.ConfigMap("typed", "default").WithData(map[string]string{"owner": "me", "shared": "x"})
	cm, err := cms.Apply(ctx, mine, metav1.ApplyOptions{FieldManager: "me"})
	if err != nil || cm.Data["owner"] != "me" {
		t.Fatalf("typed apply: %v %+v", err, cm)
	}
	extracted, err := applycorev1.ExtractConfigMap(cm, "me")
	if err != nil || len(extracted.Data) != 2 {
		t.Errorf("extracting my fields from managedFields: %v %+v", err, extracted)
	}

	theirs := applycorev1.ConfigMap("typed", "default").WithData(map[string]string{"shared": "y"})
	_, err = cms.Apply(ctx, theirs, metav1.ApplyOptions{FieldManager: "them"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "me"`) {
		t.Fatalf("apply of another manager's field: want 409 naming the owner, got %v", err)
	}
	if cm, err = cms.Apply(ctx, theirs, metav1.ApplyOptions{FieldManager: "them", Force: true}); err != nil || cm.Data["shared"] != "y" {
		t.Fatalf("forced apply: %v %+v", err, cm)
	}
	if extracted, _ = applycorev1.ExtractConfigMap(cm, "me"); extracted.Data["shared"] != "" {
		t.Errorf("me should have lost data.shared: %+v", extracted.Data)
	}

	// Status is applied through its subresource and owned there.
	pods := c.client.CoreV1().Pods("default")
	pod := applycorev1.Pod("st", "default").WithSpec(applycorev1.PodSpec().WithContainers(
		applycorev1.Container().WithName("c").WithImage("localhost/minik8s/netexec:v1")))
	if _, err := pods.Apply(ctx, pod, metav1.ApplyOptions{FieldManager: "me"}); err != nil {
		t.Fatal(err)
	}
	status := applycorev1.Pod("st", "default").WithStatus(applycorev1.PodStatus().WithMessage("hello"))
	p, err := pods.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "node"})
	if err != nil || p.Status.Message != "hello" {
		t.Fatalf("apply status: %v %+v", err, p)
	}
	if m := managerEntry(p, "node"); m == nil || m.Subresource != "status" || !strings.Contains(string(m.FieldsV1.Raw), "f:message") {
		t.Errorf("node should own status.message through the status subresource: %+v", p.ManagedFields)
	}

	// Apply without a field manager is refused, as in Kubernetes.
	hc := c.httpClient(t)
	req, _ := http.NewRequest(http.MethodPatch, c.url+"/api/v1/namespaces/default/configmaps/typed", strings.NewReader("apiVersion: v1\nkind: ConfigMap\n"))
	req.Header.Set("Content-Type", "application/apply-patch+yaml")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("apply without fieldManager: %d, want 422", resp.StatusCode)
	}
}

func managerEntry(obj metav1.Object, manager string) *metav1.ManagedFieldsEntry {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager {
			return &m
		}
	}
	return nil
}
