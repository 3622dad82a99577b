package daemonset_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// fakeKubelet marks every pod Running and Ready once the scheduler has bound it, and ends
// the pods being deleted (as a kubelet does once their containers stop) unless hold is set.
func fakeKubelet(t *testing.T, c kubernetes.Interface) (hold *atomic.Bool) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hold = &atomic.Bool{}
	factory := informers.NewSharedInformerFactory(c, 0)
	run := func(obj any) {
		pod := obj.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			if !hold.Load() {
				go func() {
					_ = c.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
				}()
			}
			return
		}
		if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodRunning {
			return
		}
		go controllertest.MarkReady(ctx, c, pod)
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: run, UpdateFunc: func(_, obj any) { run(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	return hold
}

// placement lists "node" for every live pod of the DaemonSet, sorted.
func placement(t *testing.T, c kubernetes.Interface) string {
	list, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	sort.Strings(nodes)
	return strings.Join(nodes, ",")
}

func waitPlacement(t *testing.T, c kubernetes.Interface, want string) {
	t.Helper()
	controllertest.Eventually(t, "daemonset pods' nodes", 30*time.Second, func() string { return placement(t, c) }, want)
}

const agent = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {role: edge}
      containers: [{name: c, image: localhost/minik8s/netexec:v1}]
`

func TestDaemonSetOnePodPerEligibleNode(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	fakeKubelet(t, cl.Client)
	edge := map[string]string{"role": "edge"}
	cl.CreateReadyNode(t, "node-a", 10, edge)
	cl.CreateReadyNode(t, "node-b", 10, edge)
	cl.CreateReadyNode(t, "node-c", 10, nil)
	cl.CreateReadyNode(t, "node-d", 10, edge)
	// The node IPAM controller may give node-d its podCIDR meanwhile: read it afresh on conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tainted, err := cl.Client.CoreV1().Nodes().Get(ctx, "node-d", metav1.GetOptions{})
		if err != nil {
			return err
		}
		tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		_, err = cl.Client.CoreV1().Nodes().Update(ctx, tainted, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cl.MustKubectl(t, agent, "apply", "-f", "-")
	// Scheduled by the scheduler through the node affinity the controller sets.
	waitPlacement(t, cl.Client, "node-a,node-b")
	cl.MustKubectl(t, "", "rollout", "status", "ds/agent", "--timeout=60s")
	out := cl.MustKubectl(t, "", "get", "ds", "agent")
	if row := strings.Join(strings.Fields(out), " "); !strings.Contains(row, "agent 2 2 2 2 2 role=edge") {
		t.Errorf("kubectl get ds:\n%s", out)
	}

	// A new eligible node gets a pod; a node that stops matching loses its pod.
	cl.CreateReadyNode(t, "node-e", 10, edge)
	waitPlacement(t, cl.Client, "node-a,node-b,node-e")
	cl.MustKubectl(t, "", "label", "node", "node-a", "role-")
	waitPlacement(t, cl.Client, "node-b,node-e")

	// A rolling update replaces every pod; the history shows both revisions.
	cl.MustKubectl(t, "", "set", "env", "ds/agent", "GENERATION=2")
	cl.MustKubectl(t, "", "rollout", "status", "ds/agent", "--timeout=60s")
	list, err := cl.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && (len(p.Spec.Containers[0].Env) == 0 || p.Spec.Containers[0].Env[0].Name != "GENERATION") {
			t.Errorf("pod %s on %s still runs the old template", p.Name, p.Spec.NodeName)
		}
	}
	history := cl.MustKubectl(t, "", "rollout", "history", "ds/agent")
	if !strings.Contains(history, "1 ") || !strings.Contains(history, "2 ") {
		t.Errorf("rollout history:\n%s", history)
	}
	events := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=DaemonSet")
	for _, want := range []string{"SuccessfulCreate", "Created pod: agent-", "SuccessfulDelete"} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %q:\n%s", want, events)
		}
	}
}

// TestDaemonSetPodsStayOnUnreachableNode: a node that stops reporting gets the unreachable
// NoSchedule and NoExecute taints; its DaemonSet pod tolerates the NoExecute one forever
// (the controller's automatic toleration), so it stays, as in Kubernetes: neither the
// DaemonSet controller nor taint-based eviction deletes it.
func TestDaemonSetPodsStayOnUnreachableNode(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = 200*time.Millisecond, 3*time.Second
	})
	ctx := context.Background()
	fakeKubelet(t, cl.Client)
	cl.MustKubectl(t, agent, "apply", "-f", "-")
	cl.CreateReadyNode(t, "node-a", 10, map[string]string{"role": "edge"})
	cl.CreateReadyNode(t, "alive", 10, nil) // not all nodes down: node-a gets its NoExecute taint
	cl.KeepNodeReady(t, "alive")
	waitPlacement(t, cl.Client, "node-a")
	controllertest.WaitFor(t, "node-a tainted unreachable", 15*time.Second, func() (bool, string) {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(n.Spec.Taints) == 2, fmt.Sprint(n.Spec.Taints)
	})
	// Several monitor periods and DaemonSet syncs later the pod is still there.
	for range 20 {
		if got := placement(t, cl.Client); got != "node-a" {
			t.Fatalf("daemonset pods on %q after node-a became unreachable, want node-a", got)
		}
		time.Sleep(150 * time.Millisecond)
	}
	out := cl.MustKubectl(t, "", "get", "ds", "agent", "-o", "jsonpath={.status.desiredNumberScheduled} {.status.numberMisscheduled}")
	if out != "0 1" {
		t.Errorf("status desired/misscheduled %q, want \"0 1\" (kube's counting of a pod on a node it would not start one on)", out)
	}
}

// pods lists the DaemonSet's pods: name, node and whether each is being deleted.
func pods(t *testing.T, c kubernetes.Interface) []corev1.Pod {
	list, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestDaemonSetMaxSurge: with maxSurge 1 and maxUnavailable 0 an update starts the new pod
// beside the old one and deletes the old one once the new one is available, so no node is
// ever without a ready pod; the rollout finishes.
func TestDaemonSetMaxSurge(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	fakeKubelet(t, cl.Client)
	edge := map[string]string{"role": "edge"}
	cl.CreateReadyNode(t, "node-a", 10, edge)
	cl.CreateReadyNode(t, "node-b", 10, edge)
	surging := strings.Replace(agent, "  template:", "  updateStrategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n  template:", 1)
	cl.MustKubectl(t, surging, "apply", "-f", "-")
	waitPlacement(t, cl.Client, "node-a,node-b")
	cl.MustKubectl(t, "", "rollout", "status", "ds/agent", "--timeout=60s")

	stop := make(chan struct{})
	gaps := make(chan string, 1)
	go func() {
		defer close(gaps)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			ready := map[string]bool{}
			for _, p := range pods(t, cl.Client) {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
						ready[p.Spec.NodeName] = true
					}
				}
			}
			if !ready["node-a"] || !ready["node-b"] {
				gaps <- fmt.Sprint(ready)
				return
			}
		}
	}()
	cl.MustKubectl(t, "", "set", "env", "ds/agent", "GENERATION=2")
	out, err := cl.Kubectl(t, "", "rollout", "status", "ds/agent", "--timeout=30s")
	close(stop)
	if err != nil {
		t.Fatalf("rollout status with maxSurge 1, maxUnavailable 0: %v\n%s", err, out)
	}
	if gap, ok := <-gaps; ok {
		t.Errorf("a node was without a ready pod during a surging update: ready on %s", gap)
	}
	for _, p := range pods(t, cl.Client) {
		if p.DeletionTimestamp == nil && len(p.Spec.Containers[0].Env) == 0 {
			t.Errorf("pod %s on %s still runs the old template", p.Name, p.Spec.NodeName)
		}
		// kube-apiserver counts template changes in an annotation, the controller labels pods with it.
		if p.DeletionTimestamp == nil && p.Labels["pod-template-generation"] != "2" {
			t.Errorf("pod %s labels %v: want pod-template-generation=2", p.Name, p.Labels)
		}
	}
	if gen := cl.MustKubectl(t, "", "get", "ds", "agent", "-o", `jsonpath={.metadata.annotations.deprecated\.daemonset\.template\.generation}`); gen != "2" {
		t.Errorf("deprecated.daemonset.template.generation %q after one template change, want 2", gen)
	}
}

// TestDaemonSetWaitsForTheOldPodToGo: as in Kubernetes, the controller starts no new pod on
// a node while the pod it replaces is still terminating (a hostPort, a device or a lock
// may still be held), and counts the terminating pod in its status.
func TestDaemonSetWaitsForTheOldPodToGo(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	hold := fakeKubelet(t, cl.Client)
	cl.CreateReadyNode(t, "node-a", 10, map[string]string{"role": "edge"})
	cl.MustKubectl(t, agent, "apply", "-f", "-")
	waitPlacement(t, cl.Client, "node-a")
	cl.MustKubectl(t, "", "rollout", "status", "ds/agent", "--timeout=60s")

	hold.Store(true)
	cl.MustKubectl(t, "", "set", "env", "ds/agent", "GENERATION=2")
	var old corev1.Pod
	controllertest.WaitFor(t, "the old pod terminating", 15*time.Second, func() (bool, string) {
		list := pods(t, cl.Client)
		if len(list) > 0 {
			old = list[0]
		}
		return len(list) == 1 && list[0].DeletionTimestamp != nil, fmt.Sprint(len(list))
	})
	time.Sleep(time.Second) // several syncs
	if list := pods(t, cl.Client); len(list) != 1 {
		t.Errorf("%d pods on node-a while the old one terminates, want the old one alone", len(list))
	}
	hold.Store(false)
	if err := cl.Client.CoreV1().Pods("default").Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	cl.MustKubectl(t, "", "rollout", "status", "ds/agent", "--timeout=30s")

	// A node that stops matching: its pod terminates, and is counted misscheduled meanwhile.
	hold.Store(true)
	cl.MustKubectl(t, "", "label", "node", "node-a", "role-")
	controllertest.Eventually(t, "desired/current/misscheduled", 15*time.Second, func() string {
		return cl.MustKubectl(t, "", "get", "ds", "agent", "-o", "jsonpath={.status.desiredNumberScheduled}/{.status.currentNumberScheduled}/{.status.numberMisscheduled}")
	}, "0/0/1")
}

// A node that fails every daemon pod (as a kubelet rejecting them does) gets its failed pod
// replaced with kube's back-off per DaemonSet and node (1 s, doubling): not in a hot loop of
// creates and deletes.
func TestDaemonSetBacksOffFailedPods(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var created atomic.Int32
	factory := informers.NewSharedInformerFactory(cl.Client, 0)
	fail := func(obj any) {
		pod := obj.(*corev1.Pod)
		switch {
		case pod.DeletionTimestamp != nil:
			go func() {
				_ = cl.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			}()
		case pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodFailed:
			p := pod.DeepCopy()
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "OutOfcpu"
			go func() { _, _ = cl.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}) }()
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { created.Add(1); fail(obj) },
		UpdateFunc: func(_, obj any) { fail(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	cl.CreateReadyNode(t, "node-a", 10, map[string]string{"role": "edge"})
	cl.MustKubectl(t, agent, "apply", "-f", "-")
	controllertest.WaitFor(t, "the first pod", 15*time.Second, func() (bool, string) { return created.Load() > 0, "" })
	time.Sleep(4 * time.Second)
	// Kube's back-off deletes at ~0, 1, 3 s (then 7 s): three or four pods in 4 s.
	if n := created.Load(); n < 2 || n > 5 {
		t.Errorf("%d daemon pods created in 4 s on a node failing each, want 2..5 (a failed pod is replaced with back-off)", n)
	}
	events := cl.MustKubectl(t, "", "get", "events", "--field-selector", "reason=FailedDaemonPod", "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(events, "Found failed daemon pod default/agent-") || !strings.Contains(events, "on node node-a, will try to kill it") {
		t.Errorf("FailedDaemonPod events: %q", events)
	}
}

// TestDaemonSetAdoptsAnOrphanRevisionAtOnce: as kube's addHistory, an orphan
// ControllerRevision its selector matches syncs the DaemonSet, which adopts it, though
// nothing else about the DaemonSet changed.
func TestDaemonSetAdoptsAnOrphanRevisionAtOnce(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	cl.MustKubectl(t, agent, "apply", "-f", "-")
	controllertest.WaitFor(t, "the DaemonSet's status written", 15*time.Second, func() (bool, string) {
		ds, err := cl.Client.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ds.Status.ObservedGeneration == ds.Generation, fmt.Sprint(ds.Status)
	})
	time.Sleep(time.Second) // the syncs its own status write caused are over
	orphan := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-orphan", Labels: map[string]string{"app": "agent"}},
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}, Revision: 1}
	if _, err := cl.Client.AppsV1().ControllerRevisions("default").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the orphan revision's controller", 5*time.Second, func() string {
		r, err := cl.Client.AppsV1().ControllerRevisions("default").Get(ctx, "agent-orphan", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if ref := metav1.GetControllerOf(r); ref != nil {
			return ref.Kind + "/" + ref.Name
		}
		return "none"
	}, "DaemonSet/agent")
}

// A pod the API refuses (a ResourceQuota full) fails the sync, but the status is written
// all the same, as kube's syncDaemonSet does: it shows two nodes wanting a pod and one
// having it.
func TestDaemonSetStatusUnderQuota(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	fakeKubelet(t, cl.Client)
	edge := map[string]string{"role": "edge"}
	cl.CreateReadyNode(t, "node-a", 10, edge)
	cl.CreateReadyNode(t, "node-b", 10, edge)
	controllertest.PodQuota(t, cl.Client, "default", 1)
	cl.MustKubectl(t, agent, "apply", "-f", "-")
	controllertest.Eventually(t, "desired/current/unavailable, observed generation", 30*time.Second, func() string {
		return cl.MustKubectl(t, "", "get", "ds", "agent", "-o", "jsonpath={.status.desiredNumberScheduled}/{.status.currentNumberScheduled}/{.status.numberUnavailable} {.status.observedGeneration}")
	}, "2/1/1 1")
	events := cl.MustKubectl(t, "", "get", "events", "--field-selector", "reason=FailedCreate", "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(events, "exceeded quota: pods") {
		t.Errorf("FailedCreate events: %q", events)
	}
}
