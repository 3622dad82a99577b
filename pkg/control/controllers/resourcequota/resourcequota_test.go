package resourcequota_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The tests share one miniapi, each counting in a namespace of its own.
func TestMain(m *testing.M) { controlplanetest.Main(m) }

func used(t *testing.T, c *controlplanetest.Cluster, name string) string {
	t.Helper()
	q, err := c.Client.CoreV1().ResourceQuotas(c.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for rn, v := range q.Status.Used {
		if hard, ok := q.Status.Hard[rn]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s/%s", rn, v.String(), hard.String()))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func waitUsed(t *testing.T, c *controlplanetest.Cluster, name, want string) {
	t.Helper()
	controllertest.Eventually(t, "quota "+name+" used", 45*time.Second, func() string { return used(t, c, name) }, want)
}

func pod(name, cpu, memory string, phase corev1.PodPhase) *corev1.Pod {
	res := corev1.ResourceRequirements{}
	if cpu != "" {
		res.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
		res.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: res}}}}
}

// Usage follows creates and deletes of pods (counts and compute), config maps, secrets,
// services and Jobs (count/jobs.batch); a BestEffort-scoped quota counts only pods without
// requests; kubectl reads it.
func TestQuotaUsage(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	// The root-ca-cert-publisher's kube-root-ca.crt counts too: wait for it before counting.
	for i := 0; i < 100; i++ {
		if _, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cms, _ := c.Client.CoreV1().ConfigMaps(c.Namespace).List(ctx, metav1.ListOptions{})
	baseCMs := len(cms.Items)
	svcs, _ := c.Client.CoreV1().Services(c.Namespace).List(ctx, metav1.ListOptions{})
	baseSvcs := len(svcs.Items) // the "kubernetes" Service counts too
	c.MustKubectl(t, "", "create", "quota", "all", "--hard=pods=10,services=5,configmaps=20,secrets=10,count/jobs.batch=3")
	// Compute quotas oblige every pod they cover to state its resources (ResourceQuota
	// admission): scoped to NotBestEffort, the BestEffort pods stay outside it.
	c.MustKubectl(t, "", "create", "quota", "compute", "--hard=requests.cpu=2,requests.memory=1Gi,limits.cpu=4,limits.memory=2Gi", "--scopes=NotBestEffort")
	c.MustKubectl(t, "", "create", "quota", "besteffort", "--hard=pods=5", "--scopes=BestEffort")
	want := func(pods string, cm, secrets, services, jobs int) string {
		return fmt.Sprintf("configmaps=%d/20 count/jobs.batch=%d/3 pods=%s/10 secrets=%d/10 services=%d/5", cm, jobs, pods, secrets, baseSvcs+services)
	}
	compute := func(cpu, mem string) string {
		return fmt.Sprintf("limits.cpu=%s/4 limits.memory=%s/2Gi requests.cpu=%s/2 requests.memory=%s/1Gi", cpu, mem, cpu, mem)
	}
	waitUsed(t, c, "all", want("0", baseCMs, 0, 0, 0))
	waitUsed(t, c, "compute", compute("0", "0"))
	waitUsed(t, c, "besteffort", "pods=0/5")

	pods := c.Client.CoreV1().Pods(c.Namespace)
	for _, p := range []*corev1.Pod{pod("a", "250m", "128Mi", ""), pod("b", "500m", "256Mi", ""), pod("be", "", "", "")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitUsed(t, c, "all", want("3", baseCMs, 0, 0, 0))
	waitUsed(t, c, "compute", compute("750m", "384Mi"))
	waitUsed(t, c, "besteffort", "pods=1/5")

	c.MustKubectl(t, "", "create", "configmap", "one", "--from-literal=k=v")
	c.MustKubectl(t, "", "create", "secret", "generic", "s", "--from-literal=k=v")
	c.MustKubectl(t, "", "create", "service", "clusterip", "svc", "--tcp=80:80")
	c.MustKubectl(t, "", "create", "job", "j", "--image=x")
	waitUsed(t, c, "all", want("4", baseCMs+1, 1, 1, 1))

	// A finished pod no longer uses quota; a deleted one neither.
	a, err := pods.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Status.Phase = corev1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.MustKubectl(t, "", "delete", "pod", "be", "--wait=false")
	c.MustKubectl(t, "", "delete", "configmap", "one")
	c.MustKubectl(t, "", "delete", "job", "j")
	waitUsed(t, c, "besteffort", "pods=0/5")
	// The job's pod (no requests) goes with the job.
	waitUsed(t, c, "all", want("1", baseCMs, 1, 1, 0))
	waitUsed(t, c, "compute", compute("500m", "256Mi"))

	out := c.MustKubectl(t, "", "describe", "quota", "compute")
	for _, line := range []string{"requests.cpu", "500m", "2"} {
		if !strings.Contains(out, line) {
			t.Errorf("kubectl describe quota lacks %q:\n%s", line, out)
		}
	}
}

// Extended resources and hugepages count by their requests under "requests.<name>" (and
// hugepages also under their bare name), as Kubernetes' pod evaluator counts them: the
// status captures a pod's requests, admission refuses a pod that would exceed them, and a
// deleted pod releases them (conformance: "should create a ResourceQuota and capture the
// life of a pod").
func TestQuotaExtendedResources(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	c.MustKubectl(t, "", "create", "quota", "devices", "--hard=requests.example.com/dongle=3,hugepages-2Mi=8Mi,requests.hugepages-2Mi=8Mi")
	waitUsed(t, c, "devices", "hugepages-2Mi=0/8Mi requests.example.com/dongle=0/3 requests.hugepages-2Mi=0/8Mi")

	withDevices := func(name, dongles, hugepages string) *corev1.Pod {
		p := pod(name, "", "", "")
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"),
			"example.com/dongle": resource.MustParse(dongles), "hugepages-2Mi": resource.MustParse(hugepages)}
		p.Spec.Containers[0].Resources.Limits = p.Spec.Containers[0].Resources.Requests
		return p
	}
	pods := c.Client.CoreV1().Pods(c.Namespace)
	if _, err := pods.Create(ctx, withDevices("fits", "2", "4Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "devices", "hugepages-2Mi=4Mi/8Mi requests.example.com/dongle=2/3 requests.hugepages-2Mi=4Mi/8Mi")
	if _, err := pods.Create(ctx, withDevices("too-many", "2", "2Mi"), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("a pod over the quota's dongles was admitted or refused for another reason: %v", err)
	}
	if err := pods.Delete(ctx, "fits", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "devices", "hugepages-2Mi=0/8Mi requests.example.com/dongle=0/3 requests.hugepages-2Mi=0/8Mi")
}

// An update that changes no usage (here ResourceQuota admission's own charge, an update of
// a quota that counts resourcequotas) does not recount: the informers may not hold yet the
// object just charged, and a recount would drop its charge (conformance: "should create a
// ResourceQuota and capture the life of a configMap", under load).
func TestQuotaKeepsChargesOnUpdates(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	c.MustKubectl(t, "", "create", "quota", "objects", "--hard=resourcequotas=2,secrets=10")
	waitUsed(t, c, "objects", "resourcequotas=1/2 secrets=0/10")
	// What admission does when it charges a secret the secrets informer has not seen yet.
	quotas := c.Client.CoreV1().ResourceQuotas(c.Namespace)
	q, err := quotas.Get(ctx, "objects", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status.Used[corev1.ResourceSecrets] = resource.MustParse("1")
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if got, want := used(t, c, "objects"), "resourcequotas=1/2 secrets=1/10"; got != want {
		t.Fatalf("the quota's update recounted it: used %s, want %s", got, want)
	}
}

// TestQuotaCountsCustomResources: a quota on count/<plural>.<group> of a CRD counts its
// custom resources (kube's controller watches them through a metadata informer), so
// admission charges creates against a known usage and refuses the one over the limit in
// kube's words, instead of "status unknown" for every create.
func TestQuotaCountsCustomResources(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	group := c.Namespace + ".quota.example.com"
	gadgets := c.CreateCRD(t, group, "gadgets", "Gadget", apiextensionsv1.NamespaceScoped, nil).Namespace(c.Namespace)
	gadget := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": name}}}
	}
	if _, err := gadgets.Create(ctx, gadget("g1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rn := "count/gadgets." + group
	c.MustKubectl(t, "", "create", "quota", "gadgets", "--hard="+rn+"=2")
	waitUsed(t, c, "gadgets", rn+"=1/2")
	if _, err := gadgets.Create(ctx, gadget("g2"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the second gadget, within the quota: %v", err)
	}
	waitUsed(t, c, "gadgets", rn+"=2/2")
	_, err := gadgets.Create(ctx, gadget("g3"), metav1.CreateOptions{})
	want := fmt.Sprintf(`gadgets.%s "g3" is forbidden: exceeded quota: gadgets, requested: %s=1, used: %s=2, limited: %s=2`, group, rn, rn, rn)
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("the third gadget: %v, want Forbidden %q", err, want)
	}
	if err := gadgets.Delete(ctx, "g1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "gadgets", rn+"=1/2")
}
