package nodelifecycle_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// TestRemovedNodeEvent: as kube-controller-manager's node controller, a node it knew that
// is deleted is told by a RemovingNode event, beside the RegisteredNode of its coming.
func TestRemovedNodeEvent(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) { o.NodeMonitorPeriod = 200 * time.Millisecond })
	cl.CreateReadyNode(t, "gone", 10, nil)
	event := func(reason string) func() string {
		return func() string {
			return strings.TrimSpace(cl.MustKubectl(t, "", "get", "events", "-A", "--field-selector", "involvedObject.kind=Node,involvedObject.name=gone,reason="+reason,
				"-o", "custom-columns=SOURCE:.source.component,MESSAGE:.message", "--no-headers"))
		}
	}
	controllertest.Eventually(t, "the RegisteredNode event", 10*time.Second, event("RegisteredNode"),
		"node-controller   Node gone event: Registered Node gone in Controller")
	cl.MustKubectl(t, "", "delete", "node", "gone")
	controllertest.Eventually(t, "the RemovingNode event", 10*time.Second, event("RemovingNode"),
		"node-controller   Node gone event: Removing Node gone from Controller")
}

// TestSilentNodeIsTaintedAndEvicted: a node that stops posting status, beside one that is
// alive, becomes Unknown and unreachable-tainted after the grace period; its pods go as their
// tolerations run out (DefaultTolerationSeconds gave every pod 300 s unless it says
// otherwise); the taints go when it posts Ready again.
func TestSilentNodeIsTaintedAndEvicted(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = 200*time.Millisecond, 2*time.Second
	})
	ctx := context.Background()
	cl.CreateReadyNode(t, "node-1", 10, nil)
	cl.CreateReadyNode(t, "alive", 10, nil)
	cl.KeepNodeReady(t, "alive")
	mk := func(name string, tolerate *int64, forever bool) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
		if tolerate != nil || forever {
			pod.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: tolerate}}
		}
		if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("short", ptr.To[int64](1), false)
	mk("forever", nil, true)
	mk("default", nil, false)
	got, _ := cl.Client.CoreV1().Pods("default").Get(ctx, "default", metav1.GetOptions{})
	if len(got.Spec.Tolerations) != 2 || *got.Spec.Tolerations[0].TolerationSeconds != 300 {
		t.Errorf("DefaultTolerationSeconds: tolerations %+v, want not-ready and unreachable for 300 s", got.Spec.Tolerations)
	}

	// kube-controller-manager's node controller tells of each node it comes to know,
	// in an event kubectl describe node shows.
	controllertest.WaitFor(t, "node-1's RegisteredNode event", 10*time.Second, func() (bool, string) {
		out := cl.MustKubectl(t, "", "get", "events", "-A", "--field-selector", "involvedObject.kind=Node,involvedObject.name=node-1,reason=RegisteredNode",
			"-o", "custom-columns=SOURCE:.source.component,MESSAGE:.message", "--no-headers")
		return strings.TrimSpace(out) == "node-controller   Node node-1 event: Registered Node node-1 in Controller", out
	})
	waitUnreachable(t, cl.Client, "node-1", 15*time.Second)
	controllertest.WaitFor(t, "the pod tolerating 1 s evicted", 10*time.Second, func() (bool, string) {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, "short", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil), fmt.Sprint(err)
	})
	for _, name := range []string{"forever", "default"} {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Errorf("pod %s should stay (tolerates the taint longer): %v", name, err)
		}
	}
	// As kube-controller-manager's taint-eviction-controller: its own event source, and a
	// DisruptionTarget condition on the pod before it is deleted (a Job's podFailurePolicy
	// reads it).
	controllertest.WaitFor(t, "the evicted pod's event", 10*time.Second, func() (bool, string) {
		out := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=short",
			"-o", "custom-columns=REASON:.reason,SOURCE:.source.component,MESSAGE:.message", "--no-headers")
		return strings.TrimSpace(out) == "TaintManagerEviction   taint-eviction-controller   Marking for deletion Pod default/short", out
	})
	if p, err := cl.Client.CoreV1().Pods("default").Get(ctx, "short", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "DeletionByTaintManager" &&
			c.Message == "Taint manager: deleting due to NoExecute taint"
	}) {
		t.Errorf("evicted pod's conditions %+v lack DisruptionTarget DeletionByTaintManager", p.Status.Conditions)
	}

	// The node posts Ready again: the taints go.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status = corev1.ConditionTrue
				n.Status.Conditions[i].LastHeartbeatTime = metav1.Now()
			}
		}
		_, err = cl.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "taints removed", 10*time.Second, func() (bool, string) {
		n, _ := cl.Client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		return len(n.Spec.Taints) == 0, fmt.Sprint(n.Spec.Taints)
	})
	// As the taint-eviction-controller: the eviction that waited on the pod's 300 s is
	// cancelled with an event; the pod that tolerates forever had none to cancel.
	controllertest.WaitFor(t, "the waiting eviction's cancellation event", 10*time.Second, func() (bool, string) {
		out := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=default,reason=TaintManagerEviction",
			"-o", "custom-columns=SOURCE:.source.component,MESSAGE:.message", "--no-headers")
		return strings.TrimSpace(out) == "taint-eviction-controller   Cancelling deletion of Pod default/default", out
	})
	if out := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=forever,reason=TaintManagerEviction",
		"-o", "custom-columns=MESSAGE:.message", "--no-headers"); strings.Contains(out, "deletion") {
		t.Errorf("the pod tolerating forever got eviction events: %s", out)
	}
}

// TestFutureLeaseDoesNotKeepNodeReady: the controller judges a node by when it saw the
// node's heartbeat change, as Kubernetes' does, never by the time written in it: a Lease
// renewed once with a renewTime far in the future and then no more still lets the node go
// Unknown after the grace period, while a node whose clock is years behind but renews its
// Lease stays Ready.
func TestFutureLeaseDoesNotKeepNodeReady(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = 200*time.Millisecond, 2*time.Second
	})
	ctx := context.Background()
	cl.CreateReadyNode(t, "node-c", 10, nil)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-c", Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-c"), RenewTime: &metav1.MicroTime{Time: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	if _, err := cl.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cl.CreateReadyNode(t, "skewed", 10, nil)
	skewed := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "skewed", Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("skewed"), RenewTime: &metav1.MicroTime{Time: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	skewed, err := cl.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, skewed, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renewCtx, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() { // renews every 300 ms, by its own clock
		defer close(renewed)
		for renewCtx.Err() == nil {
			time.Sleep(300 * time.Millisecond)
			skewed.Spec.RenewTime = &metav1.MicroTime{Time: skewed.Spec.RenewTime.Add(300 * time.Millisecond)}
			if next, err := cl.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(renewCtx, skewed, metav1.UpdateOptions{}); err == nil {
				skewed = next
			}
		}
	}()
	defer func() { stopRenewing(); <-renewed }()
	waitUnreachable(t, cl.Client, "node-c", 10*time.Second)
	time.Sleep(3 * time.Second) // more than a grace period after node-c's ran out
	n, err := cl.Client.CoreV1().Nodes().Get(ctx, "skewed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue || len(n.Spec.Taints) > 0 {
			t.Errorf("the node renewing its Lease with a clock behind: Ready %s, taints %v", c.Status, n.Spec.Taints)
		}
	}
}

// waitUnreachable waits for node to be Ready=Unknown with exactly the unreachable taints.
func waitUnreachable(t *testing.T, client kubernetes.Interface, node string, within time.Duration) {
	t.Helper()
	controllertest.WaitFor(t, node+" Unknown and tainted unreachable", within, func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var ready corev1.ConditionStatus
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status
			}
		}
		var taints []string
		for _, tn := range n.Spec.Taints {
			taints = append(taints, tn.Key+":"+string(tn.Effect))
		}
		joined := strings.Join(taints, ",")
		return ready == corev1.ConditionUnknown && joined == "node.kubernetes.io/unreachable:NoSchedule,node.kubernetes.io/unreachable:NoExecute",
			fmt.Sprintf("ready=%s taints=%s", ready, joined)
	})
}

// TestConditionsTaintNode: as Kubernetes' TaintNodesByCondition, a node under memory pressure
// gets the memory-pressure NoSchedule taint, so a new pod that does not tolerate it is not
// scheduled there while one that does is; a cordoned node gets the unschedulable taint; both
// go when the condition ends, and an admin's taint stays throughout.
func TestConditionsTaintNode(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = 200*time.Millisecond, time.Minute
	})
	ctx := context.Background()
	cl.CreateReadyNode(t, "node-p", 10, nil)
	update := func(change func(n *corev1.Node), status bool) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := cl.Client.CoreV1().Nodes().Get(ctx, "node-p", metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(n)
			if status {
				_, err = cl.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			} else {
				_, err = cl.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	memoryPressure := func(s corev1.ConditionStatus) func(n *corev1.Node) {
		return func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions[:1], corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: s, Reason: "KubeletHasInsufficientMemory"})
			n.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
		}
	}
	waitTaints := func(what, want string) {
		t.Helper()
		controllertest.WaitFor(t, what, 10*time.Second, func() (bool, string) {
			n, err := cl.Client.CoreV1().Nodes().Get(ctx, "node-p", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			var taints []string
			for _, tn := range n.Spec.Taints {
				taints = append(taints, tn.Key+":"+string(tn.Effect))
			}
			return strings.Join(taints, ",") == want, strings.Join(taints, ",")
		})
	}
	update(func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "example.com/admin", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	}, false)
	update(memoryPressure(corev1.ConditionTrue), true)
	waitTaints("memory-pressure taint beside the admin's", "example.com/admin:NoSchedule,node.kubernetes.io/memory-pressure:NoSchedule")

	adminToleration := corev1.Toleration{Key: "example.com/admin", Operator: corev1.TolerationOpExists}
	mk := func(name string, tolerations ...corev1.Toleration) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{Tolerations: tolerations, Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
		if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("intolerant", adminToleration)
	mk("tolerant", adminToleration, corev1.Toleration{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	controllertest.WaitFor(t, "the tolerating pod scheduled", 10*time.Second, func() (bool, string) {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, "tolerant", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "node-p", fmt.Sprint(err)
	})
	controllertest.WaitFor(t, "the other pod unschedulable for the taint", 10*time.Second, func() (bool, string) {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, "intolerant", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "node.kubernetes.io/memory-pressure") {
				return p.Spec.NodeName == "", c.Message
			}
		}
		return false, fmt.Sprintf("node %q conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	})

	update(memoryPressure(corev1.ConditionFalse), true)
	update(func(n *corev1.Node) { n.Spec.Unschedulable = true }, false)
	waitTaints("cordoned: unschedulable taint, memory-pressure gone", "example.com/admin:NoSchedule,node.kubernetes.io/unschedulable:NoSchedule")
	update(func(n *corev1.Node) { n.Spec.Unschedulable = false }, false)
	waitTaints("uncordoned: the admin's taint alone", "example.com/admin:NoSchedule")
}

// TestTolerationSecondsCountFromTaintSeen: a pod tolerating an admin's NoExecute taint for
// 3 s stays 3 s from when the taint is seen, as kube's taint-eviction-controller starts its
// timer then (processPodOnNode's now), never from the taint's timeAdded: kubectl taint sets
// none, and a client may write any. A pod that does not tolerate the taint goes at once.
func TestTolerationSecondsCountFromTaintSeen(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = 200*time.Millisecond, time.Minute
	})
	ctx := context.Background()
	cl.CreateReadyNode(t, "node-t", 10, nil)
	mk := func(name string, tolerations ...corev1.Toleration) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "node-t", Tolerations: tolerations, Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
		if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("intolerant")
	mk("three", corev1.Toleration{Key: "example.com/drain", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](3)})
	deleting := func(name string) bool {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil)
	}
	for _, added := range []*metav1.Time{nil, ptr.To(metav1.NewTime(time.Now().Add(-time.Hour)))} {
		setTaints(t, cl.Client, "node-t", corev1.Taint{Key: "example.com/drain", Value: "x", Effect: corev1.TaintEffectNoExecute, TimeAdded: added})
		tainted := time.Now()
		if added == nil {
			controllertest.WaitFor(t, "the pod not tolerating the taint evicted", 10*time.Second, func() (bool, string) {
				return deleting("intolerant"), ""
			})
		}
		time.Sleep(time.Until(tainted.Add(1500 * time.Millisecond)))
		if deleting("three") {
			t.Fatalf("timeAdded %v: the pod tolerating the taint for 3 s was evicted within 1.5 s of the taint", added)
		}
		if added == nil { // the taint goes: its eviction is cancelled, to start again with the next taint
			setTaints(t, cl.Client, "node-t")
			controllertest.WaitFor(t, "the cancelled eviction's event", 10*time.Second, func() (bool, string) {
				out := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=three,reason=TaintManagerEviction",
					"-o", "custom-columns=MESSAGE:.message", "--no-headers")
				return strings.TrimSpace(out) == "Cancelling deletion of Pod default/three", out
			})
			continue
		}
		controllertest.WaitFor(t, "the pod tolerating 3 s evicted", 10*time.Second, func() (bool, string) {
			return deleting("three"), ""
		})
		if d := time.Since(tainted); d < 3*time.Second {
			t.Errorf("evicted %v after the taint, before its 3 s toleration ran out", d)
		}
	}
}

// TestEvictionWhenTolerationEnds: a pod not tolerating a new NoExecute taint goes at once, and
// one tolerating it for 1 s goes 1 s after the controller saw the taint (when the other pod
// went), as kube's taint-eviction-controller acts on node updates and its timed queue fires,
// not at the controller's next monitor period 4 s later.
func TestEvictionWhenTolerationEnds(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = 4*time.Second, time.Minute
	})
	ctx := context.Background()
	cl.CreateReadyNode(t, "node-w", 10, nil)
	for name, seconds := range map[string]*int64{"intolerant": nil, "one": ptr.To[int64](1)} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "node-w", Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
		if seconds != nil {
			pod.Spec.Tolerations = []corev1.Toleration{{Key: "example.com/drain", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}}
		}
		if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // the controller's first round, at its start, is over
	tainted := time.Now()
	setTaints(t, cl.Client, "node-w", corev1.Taint{Key: "example.com/drain", Effect: corev1.TaintEffectNoExecute})
	deletedAt := func(name string) time.Time {
		var at time.Time
		controllertest.WaitFor(t, name+" evicted", 15*time.Second, func() (bool, string) {
			p, err := cl.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
				at = time.Now()
				return true, ""
			}
			return false, fmt.Sprint(err)
		})
		return at
	}
	seen := deletedAt("intolerant")
	if d := seen.Sub(tainted); d > 2*time.Second {
		t.Errorf("the pod not tolerating the taint went %v after it, want at once (not at the next monitor period)", d)
	}
	if d := deletedAt("one").Sub(seen); d > 2500*time.Millisecond {
		t.Errorf("the pod tolerating 1 s went %v after the taint was seen, want about 1 s", d)
	}
}

// setTaints sets the node's taints, as kubectl taint does: with an update of the node.
func setTaints(t *testing.T, client kubernetes.Interface, node string, taints ...corev1.Taint) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = taints
		_, err = client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAllNodesDownIsMasterDisruption: as kube's node lifecycle controller, when no node is
// Ready the fault is taken for the control plane's: a lone silent node gets the unreachable
// NoSchedule taint but not the NoExecute one, so its pods stay ("Entering master disruption
// mode"). Once another node is Ready again the silent one is tainted NoExecute and its pods
// go as their tolerations run out.
func TestAllNodesDownIsMasterDisruption(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = 200*time.Millisecond, 2*time.Second
	})
	ctx := context.Background()
	cl.CreateReadyNode(t, "lone", 10, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quick", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "lone", Containers: []corev1.Container{{Name: "c", Image: "img"}},
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](1)}}}}
	if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	taints := func() string {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, "lone", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, tn := range n.Spec.Taints {
			out = append(out, tn.Key+":"+string(tn.Effect))
		}
		return strings.Join(out, ",")
	}
	controllertest.WaitFor(t, "the lone node tainted unreachable NoSchedule", 15*time.Second, func() (bool, string) {
		got := taints()
		return got == "node.kubernetes.io/unreachable:NoSchedule", got
	})
	time.Sleep(2 * time.Second) // ten monitor periods, twice the pod's toleration
	if got := taints(); got != "node.kubernetes.io/unreachable:NoSchedule" {
		t.Errorf("with no node Ready the lone node's taints are %s, want the NoSchedule one alone", got)
	}
	if p, err := cl.Client.CoreV1().Pods("default").Get(ctx, "quick", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("with no node Ready the pod was evicted: %v", err)
	}

	cl.CreateReadyNode(t, "back", 10, nil)
	cl.KeepNodeReady(t, "back")
	waitUnreachable(t, cl.Client, "lone", 15*time.Second)
	controllertest.WaitFor(t, "the pod evicted once a node is Ready", 15*time.Second, func() (bool, string) {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, "quick", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil), fmt.Sprint(err)
	})
}

// TestNoExecuteTaintsPaced: as kube's zoneNoExecuteTainter (--node-eviction-rate 0.1, burst
// 1), two nodes of a zone going silent together get their unreachable NoExecute taints 10 s
// apart, so a zone losing nodes loses their pods gradually.
func TestNoExecuteTaintsPaced(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = 200*time.Millisecond, 2*time.Second
	})
	ctx := context.Background()
	for _, name := range []string{"alive", "x", "y"} {
		cl.CreateReadyNode(t, name, 10, nil)
	}
	cl.KeepNodeReady(t, "alive")
	waitUnreachable(t, cl.Client, "x", 15*time.Second)
	waitUnreachable(t, cl.Client, "y", 25*time.Second)
	var added []time.Time
	for _, name := range []string{"x", "y"} {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range n.Spec.Taints {
			if tn.Effect == corev1.TaintEffectNoExecute && tn.TimeAdded != nil {
				added = append(added, tn.TimeAdded.Time)
			}
		}
	}
	if len(added) != 2 {
		t.Fatalf("NoExecute taints with timeAdded: %v, want x's and y's", added)
	}
	if d := added[1].Sub(added[0]).Abs(); d < 9*time.Second {
		t.Errorf("the two nodes' NoExecute taints came %v apart, want about 10 s (0.1 nodes a second)", d)
	}
}

// TestNewNodeWaitsForReady: a node is created with the not-ready NoSchedule taint
// (TaintNodesByCondition admission), which keeps a pod off it while it reports Ready False;
// once it reports Ready the controller takes the taint away at once, as kube's NoSchedule
// tainting pass does on the node's update, not at its next monitor period (an hour here),
// and the pod is scheduled there.
func TestNewNodeWaitsForReady(t *testing.T) {
	cl := controlplanetest.Start(t, func(o *controlplane.Options) {
		o.NodeMonitorPeriod, o.NodeMonitorGracePeriod = time.Hour, time.Hour
	})
	ctx := context.Background()
	created, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-new"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}); len(created.Spec.Taints) != 1 || !created.Spec.Taints[0].MatchTaint(&want) {
		t.Fatalf("created with taints %+v, want the not-ready NoSchedule taint", created.Spec.Taints)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "waits", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
	if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "the pod unschedulable for the not-ready taint", 10*time.Second, func() (bool, string) {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, "waits", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, corev1.TaintNodeNotReady) {
				return p.Spec.NodeName == "", c.Message
			}
		}
		return false, fmt.Sprintf("node %q conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	})
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, "node-new", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pods := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(10, resource.DecimalSI)}
		n.Status = corev1.NodeStatus{Capacity: pods, Allocatable: pods,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}}}
		_, err = cl.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "the pod scheduled once the node is Ready", 10*time.Second, func() (bool, string) {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, "waits", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, "node-new", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == "node-new" && len(n.Spec.Taints) == 0, fmt.Sprintf("pod on %q, node taints %+v", p.Spec.NodeName, n.Spec.Taints)
	})
}
