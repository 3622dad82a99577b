package disruption_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// readyPod is a running, ready pod of the ReplicaSet on node-1, as its kubelet reports it.
func readyPod(t *testing.T, c *controlplanetest.Cluster, rs *appsv1.ReplicaSet, name string) {
	t.Helper()
	readyPodOf(t, c, *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")), "web", name)
}

// readyPodOf is a running, ready pod labelled app=app, controlled by owner.
func readyPodOf(t *testing.T, c *controlplanetest.Cluster, owner metav1.OwnerReference, app, name string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "localhost/minik8s/netexec:v1"}}},
	}
	p, err := c.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := c.Client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func statusOf(t *testing.T, c *controlplanetest.Cluster, name string) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pdb
}

func summary(p *policyv1.PodDisruptionBudget) string {
	s := p.Status
	cond := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
	reason := ""
	if cond != nil {
		reason = string(cond.Status) + "/" + cond.Reason
	}
	return fmt.Sprintf("expected=%d desired=%d healthy=%d allowed=%d gen=%d/%d %s", s.ExpectedPods, s.DesiredHealthy, s.CurrentHealthy, s.DisruptionsAllowed, s.ObservedGeneration, p.Generation, reason)
}

// Four ready pods of a ReplicaSet of 4: maxUnavailable 1 allows one disruption; kubectl
// drain evicts exactly one pod, is then refused by the budget, and a replacement becomes
// ready, allowing one again. A 50% minAvailable budget scales with the ReplicaSet.
func TestBudgetStatusAndEviction(t *testing.T) {
	// The test places the ReplicaSet's pods itself, one by one, as it needs them.
	c := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"*", "-replicaset"} })
	c.CreateReadyNode(t, "node-1", 110, nil)
	ctx := context.Background()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "localhost/minik8s/netexec:v1"}}}}},
	}
	rs, err := c.Client.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		readyPod(t, c, rs, fmt.Sprintf("web-%d", i))
	}
	c.MustKubectl(t, "", "create", "pdb", "web", "--selector=app=web", "--max-unavailable=1")
	c.MustKubectl(t, "", "create", "pdb", "half", "--selector=app=web", "--min-available=50%")
	controllertest.WaitFor(t, "budget status", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "web")
		return summary(p) == "expected=4 desired=3 healthy=4 allowed=1 gen=1/1 True/SufficientPods", summary(p)
	})
	controllertest.WaitFor(t, "percentage budget status", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "half")
		return summary(p) == "expected=4 desired=2 healthy=4 allowed=2 gen=1/1 True/SufficientPods", summary(p)
	})
	out := c.MustKubectl(t, "", "get", "pdb", "web")
	// NAME MIN-AVAILABLE MAX-UNAVAILABLE ALLOWED-DISRUPTIONS AGE
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "ALLOWED DISRUPTIONS") ||
		len(strings.Fields(lines[1])) < 4 || strings.Join(strings.Fields(lines[1])[:4], " ") != "web N/A 1 1" {
		t.Errorf("kubectl get pdb:\n%s", out)
	}
	// Two budgets cover these pods, which the eviction subresource refuses: keep one.
	c.MustKubectl(t, "", "delete", "pdb", "half")

	out, err = c.Kubectl(t, "", "drain", "node-1", "--pod-selector=app=web", "--timeout=4s")
	if err == nil || !strings.Contains(out, "Cannot evict pod as it would violate the pod's disruption budget") {
		t.Errorf("drain with one allowed disruption for four pods: err %v\n%s", err, out)
	}
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	evicted := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			evicted++
		}
	}
	if evicted != 1 {
		t.Errorf("%d pods evicted, the budget allowed 1", evicted)
	}
	controllertest.WaitFor(t, "budget spent", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "web")
		return summary(p) == "expected=4 desired=3 healthy=3 allowed=0 gen=1/1 False/InsufficientPods" && len(p.Status.DisruptedPods) == 0, summary(p)
	})
	readyPod(t, c, rs, "web-4")
	controllertest.WaitFor(t, "budget restored by a replacement", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "web")
		return summary(p) == "expected=4 desired=3 healthy=4 allowed=1 gen=1/1 True/SufficientPods", summary(p)
	})
	// A scale change of the ReplicaSet moves what the budget expects.
	c.MustKubectl(t, "", "scale", "rs", "web", "--replicas=6")
	controllertest.WaitFor(t, "budget following the scale", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "web")
		return summary(p) == "expected=6 desired=5 healthy=4 allowed=0 gen=1/1 False/InsufficientPods", summary(p)
	})
}

// Pods without a controller are left out of a maxUnavailable budget's count with a Warning
// UnmanagedPods Event, as Kubernetes does since 1.27 (getExpectedScale), instead of failing
// the sync.
func TestBudgetWithoutControllers(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lone", Labels: map[string]string{"app": "lone"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "lone"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "lone"}}}}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "the unmanaged pod left out", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "lone")
		return summary(p) == "expected=0 desired=0 healthy=0 allowed=0 gen=1/1 False/InsufficientPods", summary(p)
	})
	want := `Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:map[string]string{app: lone,},MatchExpressions:[]LabelSelectorRequirement{},}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer value.`
	controllertest.WaitFor(t, "the UnmanagedPods Event", 15*time.Second, func() (bool, string) {
		events, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=lone,reason=UnmanagedPods"})
		if err != nil || len(events.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		e := events.Items[0]
		return e.Type == corev1.EventTypeWarning && e.Message == want, e.Message
	})
}

// A budget that selects no pods says so (NoPods) when it is synced, as in Kubernetes, but
// the churn of an unrelated Deployment in its namespace (ReplicaSets created, scaled, their
// status written) does not sync it again and again.
func TestBudgetWithoutPodsIsLeftAloneByOtherWorkloads(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	countNoPods := func() int32 {
		events, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=nobody"})
		if err != nil {
			t.Fatal(err)
		}
		count := int32(0)
		for _, e := range events.Items {
			if e.Reason == "NoPods" {
				count += max(e.Count, 1)
			}
		}
		return count
	}
	// noPods is the count once the syncs and the event recorder's writes are over: at
	// least one, unchanged for 2 s (the writes are asynchronous, late on a busy machine).
	noPods := func() int32 {
		count, since := int32(-1), time.Now()
		controllertest.WaitFor(t, "the NoPods events to settle", 30*time.Second, func() (bool, string) {
			if n := countNoPods(); n != count {
				count, since = n, time.Now()
			}
			return count > 0 && time.Since(since) >= 2*time.Second, fmt.Sprint(count)
		})
		return count
	}
	c.MustKubectl(t, "", "create", "pdb", "nobody", "--selector=app=nobody", "--min-available=1")
	controllertest.WaitFor(t, "budget status", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "nobody")
		return summary(p) == "expected=0 desired=1 healthy=0 allowed=0 gen=1/1 False/InsufficientPods", summary(p)
	})
	before := noPods()
	c.MustKubectl(t, "", "create", "deployment", "other", "--image=localhost/minik8s/netexec:v1", "--replicas=2")
	c.MustKubectl(t, "", "scale", "deployment", "other", "--replicas=4")
	c.MustKubectl(t, "", "set", "env", "deployment/other", "A=1")
	c.MustKubectl(t, "", "scale", "deployment", "other", "--replicas=1")
	if after := noPods(); before == 0 || after != before {
		t.Errorf("NoPods events: %d once the budget was synced, %d after another Deployment's churn; want the same, at least 1", before, after)
	}
}

// A pod that two budgets select gets Kubernetes' Warning MultiplePodDisruptionBudgets.
func TestPodWithTwoBudgetsIsWarnedOf(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	c.MustKubectl(t, "", "create", "pdb", "one", "--selector=app=twice", "--min-available=1")
	c.MustKubectl(t, "", "create", "pdb", "two", "--selector=app=twice", "--max-unavailable=1")
	// Both budgets synced: the controller's cache has them when the pod comes.
	for _, name := range []string{"one", "two"} {
		controllertest.WaitFor(t, "budget "+name+" synced", 15*time.Second, func() (bool, string) {
			p := statusOf(t, c, name)
			return p.Status.ObservedGeneration == p.Generation, summary(p)
		})
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "twice", Labels: map[string]string{"app": "twice"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "the MultiplePodDisruptionBudgets event", 15*time.Second, func() (bool, string) {
		events, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod,involvedObject.name=twice"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "MultiplePodDisruptionBudgets" && e.Source.Component == "controllermanager" &&
				strings.HasPrefix(e.Message, `Pod "default"/"twice" matches multiple PodDisruptionBudgets.  Chose "`) && strings.HasSuffix(e.Message, `" arbitrarily.`) {
				return true, ""
			}
		}
		return false, fmt.Sprint(len(events.Items), " events")
	})
}

// A budget whose sync fails (a pod's controller is not found) allows no disruption and says
// SyncFailed with the error, but keeps the generation it last observed, as Kubernetes'
// failSafe does: the status does not claim to describe the spec it failed on.
func TestFailedSyncKeepsObservedGeneration(t *testing.T) {
	// Without the garbage collector, which would delete the pod of a missing owner.
	c := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"*", "-garbagecollector"} })
	ctx := context.Background()
	gone := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gone", UID: "0e1c1d0b-0000-4000-8000-000000000000", Controller: ptr.To(true)}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "orphan"}, OwnerReferences: []metav1.OwnerReference{gone}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A minAvailable number counts the pods themselves: the sync succeeds.
	c.MustKubectl(t, "", "create", "pdb", "orphan", "--selector=app=orphan", "--min-available=1")
	controllertest.WaitFor(t, "budget status", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "orphan")
		return summary(p) == "expected=1 desired=1 healthy=0 allowed=0 gen=1/1 False/InsufficientPods", summary(p)
	})
	// maxUnavailable needs the pod's controller, which is not there.
	c.MustKubectl(t, "", "patch", "pdb", "orphan", "--type=merge", "-p", `{"spec":{"minAvailable":null,"maxUnavailable":1}}`)
	controllertest.WaitFor(t, "the failed sync", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "orphan")
		cond := apimeta.FindStatusCondition(p.Status.Conditions, policyv1.DisruptionAllowedCondition)
		got := summary(p)
		if cond != nil {
			got += fmt.Sprintf(" %q condition-gen=%d", cond.Message, cond.ObservedGeneration)
		}
		return got == `expected=1 desired=1 healthy=0 allowed=0 gen=1/2 False/SyncFailed "found no controllers for pod \"orphan\"" condition-gen=1`, got
	})
}

// TestBudgetOfCustomResourceController: pods controlled by a custom resource count by its
// scale subresource, as kube's disruption controller finds them (getScaleController), for a
// CRD created after the controller started; a controller without a scale subresource, or of
// a kind not served, fails the sync with kube's messages.
func TestBudgetOfCustomResourceController(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	// custom makes a CRD of example.com (with a scale subresource or not) and one object of
	// it, and returns a controller reference to the object.
	custom := func(plural, kind string, scaled bool) metav1.OwnerReference {
		t.Helper()
		var subresources *apiextensionsv1.CustomResourceSubresources
		if scaled {
			subresources = &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}}
		}
		obj, err := c.CreateCRD(t, "example.com", plural, kind, apiextensionsv1.NamespaceScoped, subresources).Namespace("default").Create(ctx,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": kind,
				"metadata": map[string]any{"name": "one"}, "spec": map[string]any{"replicas": int64(3)}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return metav1.OwnerReference{APIVersion: "example.com/v1", Kind: kind, Name: "one", UID: obj.GetUID(), Controller: ptr.To(true)}
	}
	budget := func(app string) {
		t.Helper()
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: app}, Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
		if _, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scaled := custom("scalers", "Scaler", true)
	readyPodOf(t, c, scaled, "scaled", "scaled-1")
	readyPodOf(t, c, scaled, "scaled", "scaled-2")
	budget("scaled")
	controllertest.WaitFor(t, "the budget counting the scale's 3 replicas", 15*time.Second, func() (bool, string) {
		p := statusOf(t, c, "scaled")
		return summary(p) == "expected=3 desired=2 healthy=2 allowed=0 gen=1/1 False/InsufficientPods", summary(p)
	})

	readyPodOf(t, c, custom("plains", "Plain", false), "plain", "plain-1")
	readyPodOf(t, c, metav1.OwnerReference{APIVersion: "nowhere.example.com/v1", Kind: "Thing", Name: "t", UID: "4d8a3f0e-0000-4000-8000-0000000000b1", Controller: ptr.To(true)}, "nowhere", "nowhere-1")
	budget("plain")
	budget("nowhere")
	for app, want := range map[string]string{
		"plain":   "plains.example.com does not implement the scale subresource",
		"nowhere": `no matches for kind "Thing" in version "nowhere.example.com/v1"`,
	} {
		controllertest.WaitFor(t, "the "+app+" budget's failure", 15*time.Second, func() (bool, string) {
			cond := apimeta.FindStatusCondition(statusOf(t, c, app).Status.Conditions, policyv1.DisruptionAllowedCondition)
			return cond != nil && cond.Reason == policyv1.SyncFailedReason && cond.Message == want, fmt.Sprintf("%+v", cond)
		})
	}
}
