package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/minik8s/minik8s/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func admissionPod(name, spec string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n" + spec
}

const plainContainers = "  containers: [{name: app, image: localhost/minik8s/netexec:v1}]\n"

// TestServiceAccountAdmission: a pod naming a missing account is refused with
// kube-apiserver's message; an account with automountServiceAccountToken: false gives its
// pods no kube-api-access volume; a pod in a brand-new namespace waits for its default
// account instead of failing.
func TestServiceAccountAdmission(t *testing.T) {
	c := startCluster(t)
	out, err := c.kubectl(t, admissionPod("lost", "  serviceAccountName: ghost\n"+plainContainers), "create", "-f", "-")
	want := `pods "lost" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("pod with a missing account: %v\n%s\nwant %s", err, out, want)
	}
	c.mustKubectl(t, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: quiet}\nautomountServiceAccountToken: false\n", "create", "-f", "-")
	c.mustKubectl(t, admissionPod("hushed", "  serviceAccountName: quiet\n"+plainContainers), "create", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "pod", "hushed", "-o", "jsonpath={.spec.volumes}"); out != "" {
		t.Errorf("pod of an account that does not automount: volumes %s, want none", out)
	}
	c.mustKubectl(t, admissionPod("talker", plainContainers), "create", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "pod", "talker", "-o", "jsonpath={.spec.serviceAccountName} {.spec.volumes[0].name}"); !strings.HasPrefix(out, "default kube-api-access-") {
		t.Errorf("pod without an account: %q, want the default account and a kube-api-access volume", out)
	}
	// A namespace and its first pod at once: the pod waits for the default account.
	out, err = c.kubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: fresh}\n---\n"+
		"apiVersion: v1\nkind: Pod\nmetadata: {name: first, namespace: fresh}\nspec:\n"+plainContainers, "create", "-f", "-")
	if err != nil {
		t.Errorf("first pod of a new namespace: %v\n%s", err, out)
	}
}

// TestLimitRangerAdmission: a LimitRange's defaults appear in `kubectl get pod -o yaml`;
// its max and ratio refuse pods with Kubernetes' messages; a PVC above its max is refused.
func TestLimitRangerAdmission(t *testing.T) {
	c := startCluster(t)
	c.mustKubectl(t, `apiVersion: v1
kind: LimitRange
metadata: {name: bounds}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
    max: {cpu: "1"}
    maxLimitRequestRatio: {memory: "4"}
  - type: PersistentVolumeClaim
    max: {storage: 1Gi}
`, "create", "-f", "-")
	c.mustKubectl(t, admissionPod("defaulted", plainContainers), "create", "-f", "-")
	y := c.mustKubectl(t, "", "get", "pod", "defaulted", "-o", "yaml")
	for _, want := range []string{"kubernetes.io/limit-ranger: 'LimitRanger plugin set: cpu, memory request for container\n      app; cpu, memory limit for container app'",
		"limits:\n        cpu: 500m\n        memory: 128Mi\n", "requests:\n        cpu: 100m\n        memory: 64Mi\n"} {
		if !strings.Contains(y, want) {
			t.Errorf("pod under a LimitRange lacks %q:\n%s", want, y)
		}
	}
	// A limit without a request requests the limit, not the defaultRequest.
	c.mustKubectl(t, admissionPod("limited", "  containers: [{name: app, image: localhost/minik8s/netexec:v1, resources: {limits: {cpu: 800m}}}]\n"), "create", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "pod", "limited", "-o", "jsonpath={.spec.containers[0].resources.requests.cpu}"); out != "800m" {
		t.Errorf("pod with a cpu limit only: request %q, want 800m", out)
	}
	for _, tc := range []struct{ name, resources, want string }{
		{"greedy", "{limits: {cpu: \"2\"}}", `pods "greedy" is forbidden: maximum cpu usage per Container is 1, but limit is 2`},
		{"lopsided", "{requests: {memory: 16Mi}, limits: {memory: 128Mi}}", `pods "lopsided" is forbidden: memory max limit to request ratio per Container is 4, but provided ratio is 8.000000`},
	} {
		out, err := c.kubectl(t, admissionPod(tc.name, "  containers: [{name: app, image: localhost/minik8s/netexec:v1, resources: "+tc.resources+"}]\n"), "create", "-f", "-")
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %v\n%s\nwant %s", tc.name, err, out, tc.want)
		}
	}
	out, err := c.kubectl(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: big}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}\n", "create", "-f", "-")
	if want := `persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi`; err == nil || !strings.Contains(out, want) {
		t.Errorf("claim above the max: %v\n%s\nwant %s", err, out, want)
	}
}

// TestResourceQuotaAdmission: the N+1th pod is refused with Kubernetes' message; usage is
// charged at admission so concurrent creates never overshoot; a compute quota refuses a
// pod that does not state the limit it counts.
func TestResourceQuotaAdmission(t *testing.T) {
	c := startCluster(t)
	c.mustKubectl(t, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\nspec: {hard: {pods: \"2\"}}\n", "create", "-f", "-")
	c.waitFor(t, "0", "get", "quota", "q", "-o", "jsonpath={.status.used.pods}")
	c.mustKubectl(t, admissionPod("one", plainContainers), "create", "-f", "-")
	c.mustKubectl(t, admissionPod("two", plainContainers), "create", "-f", "-")
	out, err := c.kubectl(t, admissionPod("three", plainContainers), "create", "-f", "-")
	want := `pods "three" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("third pod under pods=2: %v\n%s\nwant %s", err, out, want)
	}

	// Concurrent creates: exactly as many as the quota allows get in.
	c.mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: race}\n---\n"+
		"apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: race}\nspec: {hard: {configmaps: \"5\"}}\n", "create", "-f", "-")
	c.waitFor(t, "1", "get", "quota", "q", "-n", "race", "-o", "jsonpath={.status.used.configmaps}") // kube-root-ca.crt
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}
			if _, err := c.client.CoreV1().ConfigMaps("race").Create(context.Background(), cm, metav1.CreateOptions{}); err == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 4 {
		t.Errorf("12 concurrent configmap creates under configmaps=5 (1 used): %d admitted, want 4", admitted)
	}
	if out := c.mustKubectl(t, "", "get", "quota", "q", "-n", "race", "-o", "jsonpath={.status.used.configmaps}"); out != "5" {
		t.Errorf("quota usage after the race: %s, want 5", out)
	}

	c.mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: compute}\n---\n"+
		"apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: cpu, namespace: compute}\nspec: {hard: {limits.cpu: \"2\"}}\n", "create", "-f", "-")
	c.waitFor(t, "0", "get", "quota", "cpu", "-n", "compute", "-o", "jsonpath={.status.used.limits\\.cpu}")
	out, err = c.kubectl(t, admissionPod("bare", "  containers: [{name: c, image: localhost/minik8s/netexec:v1}]\n"), "create", "-n", "compute", "-f", "-")
	want = `pods "bare" is forbidden: failed quota: cpu: must specify limits.cpu for: c`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("pod without limits under a limits.cpu quota: %v\n%s\nwant %s", err, out, want)
	}
}

// TestPodSecurityAdmission: a restricted namespace refuses a privileged pod with the
// library's message and only warns about a Deployment's template; a warn label warns.
func TestPodSecurityAdmission(t *testing.T) {
	c := startCluster(t)
	c.mustKubectl(t, `apiVersion: v1
kind: Namespace
metadata: {name: locked, labels: {pod-security.kubernetes.io/enforce: restricted}}
---
apiVersion: v1
kind: Namespace
metadata: {name: watched, labels: {pod-security.kubernetes.io/warn: baseline}}
`, "create", "-f", "-")
	privileged := "  containers: [{name: app, image: localhost/minik8s/netexec:v1, securityContext: {privileged: true}}]\n"
	out, err := c.kubectl(t, admissionPod("root", privileged), "create", "-n", "locked", "-f", "-")
	want := `pods "root" is forbidden: violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true)`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("privileged pod in a restricted namespace: %v\n%s\nwant %s", err, out, want)
	}
	out = c.mustKubectl(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: localhost/minik8s/netexec:v1, securityContext: {privileged: true}}]
`, "create", "-n", "locked", "-f", "-")
	if !strings.Contains(out, `Warning: would violate PodSecurity "restricted:latest"`) {
		t.Errorf("privileged Deployment in a restricted namespace: want a warning only, got\n%s", out)
	}
	out = c.mustKubectl(t, admissionPod("loud", privileged), "create", "-n", "watched", "-f", "-")
	if !strings.Contains(out, `Warning: would violate PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)`) {
		t.Errorf("privileged pod in a warn=baseline namespace: want a warning, got\n%s", out)
	}
}

// TestNodeRestrictionAdmission: node-1's own credentials create a mirror pod of itself but
// not an ordinary pod nor one bound elsewhere, cannot label node-2, and cannot give itself
// node-restriction.kubernetes.io/ labels; it writes its own heartbeat Lease but cannot
// create, renew or delete another node's (403).
func TestNodeRestrictionAdmission(t *testing.T) {
	var dataDir string
	c := startClusterWith(t, func(o *Options) { dataDir = o.DataDir })
	c.createReadyNode(t, "node-1", 10)
	c.createReadyNode(t, "node-2", 10)
	node := c.asNode(t, dataDir, "node-1")
	n1, err := c.client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mirror := func(name, nodeName string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  annotations: {kubernetes.io/config.mirror: "x"}
  ownerReferences: [{apiVersion: v1, kind: Node, name: node-1, uid: %s, controller: true}]
spec:
  nodeName: %s
`, name, n1.UID, nodeName) + plainContainers
	}
	node.mustKubectl(t, mirror("static-node-1", "node-1"), "create", "-f", "-")
	for _, tc := range []struct{ manifest, want string }{
		{admissionPod("sneaky", "  nodeName: node-1\n"+plainContainers),
			`pods "sneaky" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node-1" can only create mirror pods`},
		{mirror("elsewhere", "node-2"), `pods "elsewhere" is forbidden: node "node-1" can only create pods with spec.nodeName set to itself`},
	} {
		out, err := node.kubectl(t, tc.manifest, "create", "-f", "-")
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("node-1 creating a pod: %v\n%s\nwant %s", err, out, tc.want)
		}
	}
	if out, err := node.kubectl(t, "", "label", "node", "node-2", "team=blue"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("node-1 labelling node-2: %v\n%s", err, out)
	}
	out, err := node.kubectl(t, "", "label", "node", "node-1", "node-restriction.kubernetes.io/trusted=yes")
	if want := `nodes "node-1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/trusted`; err == nil || !strings.Contains(out, want) {
		t.Errorf("node-1 giving itself a node-restriction label: %v\n%s\nwant %s", err, out, want)
	}
	node.mustKubectl(t, "", "label", "node", "node-1", "topology.kubernetes.io/zone=a")

	lease := func(name string) string {
		return fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q,"namespace":"kube-node-lease"},`+
			`"spec":{"holderIdentity":%q,"renewTime":"2099-01-01T00:00:00.000000Z"}}`, name, name)
	}
	node.mustKubectl(t, lease("node-1"), "create", "-f", "-")
	c.mustKubectl(t, lease("node-2"), "create", "-f", "-")
	const other = "can only access node lease with the same name as the requesting node"
	for _, args := range [][]string{{"create", "-f", "-"}, {"replace", "-f", "-"}, {"delete", "-f", "-"}} {
		name := "node-2"
		if args[0] == "create" {
			name = "node-c"
		}
		out, err := node.kubectl(t, lease(name), args...)
		if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, other) {
			t.Errorf("node-1: kubectl %s lease %s: %v\n%s\nwant 403 %q", args[0], name, err, out, other)
		}
	}
}

// asNode is c with the credentials of node name (system:node:name in system:nodes), signed
// by the cluster CA under dataDir.
func (c *cluster) asNode(t *testing.T, dataDir, name string) cluster {
	t.Helper()
	ca, err := pki.EnsureCA(PKIDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	node := *c
	node.kubeconfig = filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := ca.WriteKubeconfig(node.kubeconfig, c.url, "system:node:"+name, []string{"system:nodes"}); err != nil {
		t.Fatal(err)
	}
	return node
}
