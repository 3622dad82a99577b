package agent

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/apparmor"
)

// Under MemoryPressure a new BestEffort pod is rejected as the kubelet rejects it: its
// worker fails it without a sandbox, with reason Evicted, "Pod was rejected: " and the
// admit handler's message, and a Warning Event; a Burstable pod starts.
func TestAdmitRejectsBestEffortUnderMemoryPressure(t *testing.T) {
	h := newHarness(t)
	available, workingSet := uint64(50<<20), uint64(900<<20) // below the default 100Mi
	h.agent.pressure.Observe(&statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{AvailableBytes: &available, WorkingSetBytes: &workingSet}}}, h.Clock.Now())

	bestEffort := h.createPod(agenttest.Pod("best-effort", corev1.RestartPolicyAlways, "app"))
	h.agent.admit(bestEffort)
	h.sync(bestEffort)
	got := agenttest.GetPod(h.ctx, t, h.Client, bestEffort)
	if want := "Pod was rejected: The node had condition: [MemoryPressure]. "; got.Status.Phase != corev1.PodFailed || got.Status.Reason != "Evicted" || got.Status.Message != want {
		t.Errorf("best-effort pod's status %s %s %q, want Failed Evicted %q", got.Status.Phase, got.Status.Reason, got.Status.Message, want)
	}
	if cs, _ := h.Runtime.ListContainers(h.ctx, string(bestEffort.UID)); len(cs) != 0 {
		t.Errorf("the rejected pod got containers: %+v", cs)
	}
	if ev := <-h.Events.Events; !strings.HasPrefix(ev, "Warning Evicted The node had condition: [MemoryPressure]. ") {
		t.Errorf("event %q", ev)
	}

	burstable := agenttest.Pod("burstable", corev1.RestartPolicyAlways, "app")
	burstable.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Mi")}
	burstable = h.createPod(burstable)
	h.agent.admit(burstable)
	h.sync(burstable)
	if got := agenttest.GetPod(h.ctx, t, h.Client, burstable); got.Status.Phase == corev1.PodFailed {
		t.Errorf("burstable pod rejected: %s %q", got.Status.Reason, got.Status.Message)
	}
	if cs, _ := h.Runtime.ListContainers(h.ctx, string(burstable.UID)); len(cs) == 0 {
		t.Error("the burstable pod did not start")
	}
}

// A pod asking for more CPU than the node has allocatable (bound by nodeName, past the
// scheduler) is rejected as the kubelet's predicate admission does: Failed, OutOfcpu, the
// InsufficientResourceError words, and a Warning Event.
func TestAdmitRejectsPodOutOfCPU(t *testing.T) {
	h := newHarness(t)
	greedy := agenttest.Pod("greedy", corev1.RestartPolicyAlways, "app")
	greedy.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100000")}
	greedy = h.createPod(greedy)
	h.agent.admit(greedy)
	h.sync(greedy)
	got := agenttest.GetPod(h.ctx, t, h.Client, greedy)
	want := "Pod was rejected: Node didn't have enough resource: cpu, requested: 100000000, used: 0, capacity: "
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != "OutOfcpu" || !strings.HasPrefix(got.Status.Message, want) {
		t.Errorf("status %s %s %q, want Failed OutOfcpu %q...", got.Status.Phase, got.Status.Reason, got.Status.Message, want)
	}
	// The kubelet's rejectPod status and nothing more: no container statuses (kubectl get
	// pods shows OutOfcpu, not ContainerCreating), no conditions of the kubelet's, no IPs.
	if s := got.Status; len(s.ContainerStatuses) != 0 || len(s.InitContainerStatuses) != 0 || len(s.Conditions) != 0 ||
		s.HostIP != "" || len(s.HostIPs) != 0 || s.PodIP != "" || s.StartTime == nil || s.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("rejected pod's status has more or less than rejectPod's: %+v", s)
	}
	if cs, _ := h.Runtime.ListContainers(h.ctx, string(greedy.UID)); len(cs) != 0 {
		t.Errorf("the rejected pod got containers: %+v", cs)
	}
	if ev := <-h.Events.Events; !strings.HasPrefix(ev, "Warning OutOfcpu Node didn't have enough resource: cpu, requested: 100000000") {
		t.Errorf("event %q", ev)
	}
}

// A pod being deleted holds its resources until it has stopped, as the kubelet counts it
// (filterOutInactivePods): while its preStop hook runs, a new pod that fits only without
// it is rejected OutOfcpu.
func TestAdmitCountsPodsBeingDeleted(t *testing.T) {
	h := newHarness(t)
	hookStarted, releaseHook := make(chan struct{}), make(chan struct{})
	h.Runtime.ExecFn = func(_ string, cmd []string) (int, string) {
		if len(cmd) > 0 && cmd[0] == "hold" {
			close(hookStarted)
			<-releaseHook
		}
		return 0, ""
	}
	defer func() {
		select {
		case <-releaseHook:
		default:
			close(releaseHook)
		}
	}()
	_, ctx := h.run()
	var cpu resource.Quantity
	waitFor(t, "node allocatable", func() bool {
		node, err := h.Client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		if err != nil {
			return false
		}
		cpu = node.Status.Allocatable[corev1.ResourceCPU]
		return !cpu.IsZero()
	})
	asking := func(name string, milli int64) *corev1.Pod {
		pod := agenttest.Pod(name, corev1.RestartPolicyAlways, "app")
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
		return pod
	}
	old := asking("old", cpu.MilliValue()*2/3)
	old.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hold"}}}}
	old = h.createPod(old)
	waitFor(t, "old pod Running", func() bool {
		got, err := h.Client.CoreV1().Pods(old.Namespace).Get(ctx, old.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning
	})
	deleting, err := h.Client.CoreV1().Pods(old.Namespace).Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &metav1.Time{Time: time.Now()}, ptr.To[int64](30)
	if _, err := h.Client.CoreV1().Pods(old.Namespace).Update(ctx, deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hookStarted:
	case <-time.After(20 * time.Second):
		t.Fatal("the old pod's preStop hook did not run")
	}

	newPod := h.createPod(asking("new", cpu.MilliValue()/2))
	waitFor(t, "new pod rejected", func() bool {
		got, err := h.Client.CoreV1().Pods(newPod.Namespace).Get(ctx, newPod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase != corev1.PodPending
	})
	got := agenttest.GetPod(ctx, t, h.Client, newPod)
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != "OutOfcpu" {
		t.Errorf("new pod %s %s %q, want Failed OutOfcpu while the old one stops", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
}

// A pod for another OS (spec.os, or a kubernetes.io/os label) bound past the scheduler is
// rejected as the kubelet's predicate admission does: Failed, PodOSNotSupported or
// PodOSSelectorNodeLabelDoesNotMatch, and a Warning Event.
func TestAdmitRejectsPodOfAnotherOS(t *testing.T) {
	h := newHarness(t)
	windows := agenttest.Pod("windows", corev1.RestartPolicyAlways, "app")
	windows.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	labelled := agenttest.Pod("labelled", corev1.RestartPolicyAlways, "app")
	labelled.Labels = map[string]string{corev1.LabelOSStable: "windows"}
	for _, c := range []struct {
		pod             *corev1.Pod
		reason, message string
	}{
		{windows, "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"},
		{labelled, "PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
	} {
		h.wantRejected(c.pod, c.reason, c.message)
	}
}

// A pod that needs a feature the node does not declare (a user namespace on the host's
// network) is rejected as the kubelet's DeclaredFeaturesAdmitHandler does: Failed,
// PodFeatureUnsupported, and a Warning Event.
func TestAdmitRejectsPodNeedingUndeclaredFeature(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("userns-hostnet", corev1.RestartPolicyAlways, "app")
	pod.Spec.HostNetwork, pod.Spec.HostUsers = true, ptr.To(false)
	h.wantRejected(pod, "PodFeatureUnsupported", "Pod requires node features that are not available: UserNamespacesHostNetworkSupport")
}

// A pod bound by nodeName to a node its nodeSelector does not match, or whose NoExecute
// taint it does not tolerate, is rejected as the kubelet's predicate admission does:
// Failed, NodeAffinity or TaintToleration, "Predicate ... failed: ...", a Warning Event.
// A pod that matches and tolerates starts.
func TestAdmitRejectsPodTheNodeDoesNotMatch(t *testing.T) {
	h := newHarness(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{"disk": "ssd"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}}}
	if _, err := h.Client.CoreV1().Nodes().Create(h.ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tolerating := func(pod *corev1.Pod) *corev1.Pod {
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		return pod
	}
	selecting := tolerating(agenttest.Pod("selecting", corev1.RestartPolicyAlways, "app"))
	selecting.Spec.NodeSelector = map[string]string{"disk": "hdd"}
	untolerating := agenttest.Pod("untolerating", corev1.RestartPolicyAlways, "app")
	for _, c := range []struct {
		pod             *corev1.Pod
		reason, message string
	}{
		{selecting, "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{untolerating, "TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
	} {
		h.wantRejected(c.pod, c.reason, c.message)
	}
	fitting := tolerating(agenttest.Pod("fitting", corev1.RestartPolicyAlways, "app"))
	fitting.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	fitting = h.createPod(fitting)
	h.agent.admit(fitting)
	h.sync(fitting)
	if got := agenttest.GetPod(h.ctx, t, h.Client, fitting); got.Status.Phase == corev1.PodFailed {
		t.Errorf("fitting pod rejected: %s %q", got.Status.Reason, got.Status.Message)
	}
}

// The node the admitters see is the API's as it is now, as the kubelet's node informer
// gives it: a NoExecute taint put on a running node refuses the next pod at once, not
// after the node's next status post.
func TestAdmitSeesTheNodeAsItIsNow(t *testing.T) {
	h := newHarness(t)
	a, ctx := h.run()
	var node *corev1.Node
	waitFor(t, "node registered", func() bool {
		var err error
		node, err = h.Client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		return err == nil && a.nodeForAdmission(false) != nil
	})
	node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}
	if _, err := h.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Until(t, "the taint seen by admission", 3*time.Second, func() bool {
		seen := a.nodeForAdmission(false)
		return seen != nil && len(seen.Spec.Taints) == 1
	})
}

// wantRejected creates pod, has the agent admit and sync it, and wants it refused as the
// kubelet's rejectPod: Failed with reason, "Pod was rejected: " and message, and a Warning
// event with reason and message.
func (h *harness) wantRejected(pod *corev1.Pod, reason, message string) {
	t := h.t
	t.Helper()
	pod = h.createPod(pod)
	h.agent.admit(pod)
	h.sync(pod)
	got := agenttest.GetPod(h.ctx, t, h.Client, pod)
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != reason || got.Status.Message != "Pod was rejected: "+message {
		t.Errorf("%s: status %s %s %q, want Failed %s %q", pod.Name, got.Status.Phase, got.Status.Reason, got.Status.Message, reason, message)
	}
	if ev := <-h.Events.Events; ev != "Warning "+reason+" "+message {
		t.Errorf("%s: event %q", pod.Name, ev)
	}
}

// The admitters run in the kubelet's order: eviction first, then sysctls. A BestEffort pod
// with a forbidden sysctl on a node under MemoryPressure is Evicted, not SysctlForbidden.
func TestAdmitEvictionBeforeSysctls(t *testing.T) {
	h := newHarness(t)
	available, workingSet := uint64(50<<20), uint64(900<<20) // below the default 100Mi
	h.agent.pressure.Observe(&statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{AvailableBytes: &available, WorkingSetBytes: &workingSet}}}, h.Clock.Now())
	pod := agenttest.Pod("tuned", corev1.RestartPolicyAlways, "app")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
	pod = h.createPod(pod)
	h.agent.admit(pod)
	h.sync(pod)
	if got := agenttest.GetPod(h.ctx, t, h.Client, pod); got.Status.Reason != "Evicted" {
		t.Errorf("status %s %s %q, want Evicted as the kubelet's eviction admit handler, its first", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
}

// A pod asking for supplementalGroupsPolicy Strict on a node whose status does not say it
// supports it (minilet's: the image's groups are always added) is rejected as the kubelet's
// predicate admission does: Failed, SupplementalGroupsPolicyNotSupported, and a Warning
// Event. Merge is admitted.
func TestAdmitRejectsStrictSupplementalGroups(t *testing.T) {
	h := newHarness(t)
	strict := agenttest.Pod("strict", corev1.RestartPolicyAlways, "app")
	strict.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(corev1.SupplementalGroupsPolicyStrict)}
	h.wantRejected(strict, "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node")

	merge := agenttest.Pod("merge", corev1.RestartPolicyAlways, "app")
	merge.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(corev1.SupplementalGroupsPolicyMerge)}
	merge = h.createPod(merge)
	h.agent.admit(merge)
	h.sync(merge)
	if got := agenttest.GetPod(h.ctx, t, h.Client, merge); got.Status.Phase == corev1.PodFailed {
		t.Errorf("Merge pod rejected: %s %q", got.Status.Reason, got.Status.Message)
	}
}

// A pod asking for an AppArmor profile goes through the kubelet's AppArmor admission: on a
// host without AppArmor (this one, as CI's) it is rejected, on one with AppArmor admitted.
func TestAdmitAppArmorAsTheHostAllows(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("confined", corev1.RestartPolicyAlways, "app")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
	if !apparmor.HostEnabled() {
		h.wantRejected(pod, "AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host")
		return
	}
	pod = h.createPod(pod)
	h.agent.admit(pod)
	h.sync(pod)
	if got := agenttest.GetPod(h.ctx, t, h.Client, pod); got.Status.Phase == corev1.PodFailed {
		t.Errorf("rejected on a host with AppArmor: %s %q", got.Status.Reason, got.Status.Message)
	}
}
