package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
)

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	controllertest.WaitFor(t, what, 30*time.Second, cond)
}

func webPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: corev1.LabelHostname}}}}}}
}

// cpuPod asks for milli CPUs at a priority; a priority other than 0 comes from the
// PriorityClass "p<priority>" (the Priority admission plugin refuses a bare one).
func cpuPod(name string, milli int64, priority int32) *corev1.Pod {
	class := ""
	if priority != 0 {
		class = fmt.Sprintf("p%d", priority)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{PriorityClassName: class, Priority: ptr.To(priority), Containers: []corev1.Container{{Name: "c", Image: "img",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}}}}}}
}

// TestAgainstMiniapi runs the scheduler inside a real miniapi with fake Ready nodes:
// anti-affinity spreads and explains the pod left over, a new node takes it, another
// scheduler's pod is left alone, a high-priority pod preempts, and /metrics counts.
func TestAgainstMiniapi(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	pods := c.Client.CoreV1().Pods("default")
	c.CreateReadyNode(t, "n1", 110, map[string]string{corev1.LabelHostname: "n1"})
	c.CreateReadyNode(t, "n2", 110, map[string]string{corev1.LabelHostname: "n2"})
	for _, v := range []int32{1, 2, 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", v)}, Value: v}
		if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, name := range []string{"web-1", "web-2", "web-3"} {
		if _, err := pods.Create(ctx, webPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other := cpuPod("other", 0, 0)
	other.Spec.SchedulerName = "other"
	if _, err := pods.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeOf := func(name string) string {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "error: " + err.Error()
		}
		return p.Spec.NodeName
	}
	pending := ""
	waitFor(t, "two web pods bound to distinct nodes, one pending", func() (bool, string) {
		placed := map[string]string{}
		pending = ""
		for _, n := range []string{"web-1", "web-2", "web-3"} {
			if node := nodeOf(n); node == "" {
				pending = n
			} else {
				placed[node] = n
			}
		}
		return len(placed) == 2 && pending != "", strings.Join([]string{nodeOf("web-1"), nodeOf("web-2"), nodeOf("web-3")}, ",")
	})
	want := "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
	waitFor(t, "the pending pod's condition and FailedScheduling event", func() (bool, string) {
		p, _ := pods.Get(ctx, pending, metav1.GetOptions{})
		cond := ""
		for _, cd := range p.Status.Conditions {
			// With the pod's generation observed, as kube-scheduler writes it.
			if cd.Type == corev1.PodScheduled && cd.Status == corev1.ConditionFalse && cd.Reason == corev1.PodReasonUnschedulable && cd.ObservedGeneration == p.Generation {
				cond = cd.Message
			}
		}
		// An events.k8s.io event, as kube-scheduler records them: the scheduler's name and
		// instance, an action, no deprecated source.
		evs, _ := c.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("regarding.name", pending).String()})
		ev := ""
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && e.Type == corev1.EventTypeWarning && e.ReportingController == "default-scheduler" && e.Action == "Scheduling" &&
				strings.HasPrefix(e.ReportingInstance, "default-scheduler-") && e.DeprecatedSource.Component == "" {
				ev = e.Note
			}
		}
		return cond == want && ev == want, "condition " + cond + " / event " + ev
	})

	// A third node (a Node add event) lets the pending pod in without waiting for a retry.
	c.CreateReadyNode(t, "n3", 110, map[string]string{corev1.LabelHostname: "n3"})
	waitFor(t, "the pending web pod bound to the new node", func() (bool, string) { return nodeOf(pending) == "n3", nodeOf(pending) })

	// Preemption: each node's 2 CPUs held by a low-priority pod; a high one takes one node.
	for i, node := range []string{"n1", "n2", "n3"} {
		p := cpuPod("low-"+node, 1500, int32(i))
		p.Spec.NodeName = node
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pods.Create(ctx, cpuPod("high", 1500, 1000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the high-priority pod nominated to n1 (its victim has the lowest priority)", func() (bool, string) {
		p, _ := pods.Get(ctx, "high", metav1.GetOptions{})
		return p.Status.NominatedNodeName == "n1", p.Status.NominatedNodeName
	})
	waitFor(t, "the victim deleted gracefully", func() (bool, string) {
		v, err := pods.Get(ctx, "low-n1", metav1.GetOptions{})
		return err == nil && v.DeletionTimestamp != nil, "not terminating"
	})
	// No kubelet runs here: confirm the victim's end as a kubelet would.
	if err := pods.Delete(ctx, "low-n1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the high-priority pod bound to n1", func() (bool, string) { return nodeOf("high") == "n1", nodeOf("high") })

	// Another scheduler's pod: never touched.
	p, _ := pods.Get(ctx, "other", metav1.GetOptions{})
	if p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 {
		t.Errorf("schedulerName=other was touched: node %q, conditions %v", p.Spec.NodeName, p.Status.Conditions)
	}

	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}`,
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"}`, `scheduler_pending_pods{queue="active"}`,
		`scheduler_pod_scheduling_sli_duration_seconds_bucket`} {
		if !strings.Contains(string(raw), line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}
