package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/minik8s/minik8s/pkg/stats"
)

const testNode = "node-1"

// testManager is a manager on client-go's fake clientset and a fake clock, whose runtime
// answers runtimeErr (nil: containerd 1.6.20).
type testManager struct {
	*Manager
	client     *fake.Clientset
	clock      *clocktesting.FakeClock
	runtimeErr error
}

func newTestManager(t *testing.T, edit func(*Config)) *testManager {
	tm := &testManager{client: fake.NewClientset(), clock: clocktesting.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))}
	cfg := Config{
		Node:   Node{Name: testNode, IP: "10.200.0.11", PodCIDR: "10.244.1.0/24"},
		Client: tm.client, Clock: tm.clock, Log: slog.New(slog.DiscardHandler),
		Runtime: func(context.Context) (string, error) {
			if tm.runtimeErr != nil {
				return "", tm.runtimeErr
			}
			return "1.6.20", nil
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	tm.Manager = New(cfg)
	return tm
}

// node posts status and returns the Node as the API has it.
func (tm *testManager) node(t *testing.T) *corev1.Node {
	t.Helper()
	if err := tm.UpdateStatus(t.Context()); err != nil {
		t.Fatal(err)
	}
	node, err := tm.client.CoreV1().Nodes().Get(t.Context(), testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return node
}

func condition(node *corev1.Node, typ corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func TestNodeRegistrationAndStatus(t *testing.T) {
	capacity, err := HostCapacity(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	reserved, err := ParseReserved("system-reserved", map[string]string{"memory": "512Mi", "cpu": "100m"})
	if err != nil {
		t.Fatal(err)
	}
	tm := newTestManager(t, func(c *Config) { c.Capacity, c.Allocatable = capacity, Allocatable(capacity, reserved) })
	if err := tm.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	node := tm.node(t)
	if node.Labels[corev1.LabelHostname] != testNode || node.Labels[corev1.LabelOSStable] != "linux" || node.Labels[corev1.LabelArchStable] == "" {
		t.Errorf("labels %v", node.Labels)
	}
	// The kubelet still sets the beta os/arch labels beside the stable ones, and says
	// volumes are attached by the controller.
	if node.Labels["beta.kubernetes.io/os"] != "linux" || node.Labels["beta.kubernetes.io/arch"] != node.Labels[corev1.LabelArchStable] {
		t.Errorf("beta labels missing: %v", node.Labels)
	}
	if node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] != "true" {
		t.Errorf("annotations %v", node.Annotations)
	}
	if node.Spec.PodCIDR != "10.244.1.0/24" || len(node.Spec.PodCIDRs) != 1 {
		t.Errorf("podCIDR %q %v", node.Spec.PodCIDR, node.Spec.PodCIDRs)
	}
	if len(node.Status.Addresses) != 2 || node.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.200.0.11"}) {
		t.Errorf("addresses %v", node.Status.Addresses)
	}
	if node.Status.Capacity.Cpu().Value() < 1 || node.Status.Capacity.Memory().Value() < 1<<20 || node.Status.Allocatable.Pods().Value() != 110 {
		t.Errorf("capacity %v allocatable %v", node.Status.Capacity, node.Status.Allocatable)
	}
	wantMemory := capacity.Memory().Value() - 512<<20
	if got := node.Status.Allocatable.Memory().Value(); got != wantMemory || node.Status.Allocatable.Cpu().MilliValue() != capacity.Cpu().MilliValue()-100 {
		t.Errorf("allocatable %v with 512Mi and 100m reserved from capacity %v", node.Status.Allocatable, node.Status.Capacity)
	}
	info := node.Status.NodeInfo
	if info.ContainerRuntimeVersion != "containerd://1.6.20" || info.KubeletVersion != KubeletVersion || info.KernelVersion == "" || info.OSImage == "" {
		t.Errorf("nodeInfo %+v", info)
	}
	// As the kubelet reports its runtime's handlers: the default one, without recursive
	// read-only mounts or user namespaces.
	if h := node.Status.RuntimeHandlers; len(h) != 1 || h[0].Name != "" || h[0].Features == nil ||
		h[0].Features.RecursiveReadOnlyMounts == nil || *h[0].Features.RecursiveReadOnlyMounts ||
		h[0].Features.UserNamespaces == nil || *h[0].Features.UserNamespaces {
		t.Errorf("runtimeHandlers %+v, want the default handler with neither feature", h)
	}
	if port := node.Status.DaemonEndpoints.KubeletEndpoint.Port; port != 0 {
		t.Errorf("kubelet endpoint port %d without a node API", port)
	}
	// NodeDeclaredFeatures (on in 1.36): the features the node carries out, sorted.
	if got := node.Status.DeclaredFeatures; !slices.Equal(got, []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}) {
		t.Errorf("declaredFeatures %v", got)
	}
	ready := condition(node, corev1.NodeReady)
	if ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" {
		t.Errorf("Ready %+v", ready)
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		if condition(node, c).Status != corev1.ConditionFalse {
			t.Errorf("%s is not False", c)
		}
	}

	// containerd goes away: NotReady with the reason, a fresh heartbeat and a new transition time.
	tm.clock.Step(10 * time.Second)
	tm.runtimeErr = errors.New("container runtime is down: connection refused")
	node = tm.node(t)
	notReady := condition(node, corev1.NodeReady)
	if notReady.Status != corev1.ConditionFalse || notReady.Reason != "KubeletNotReady" || !strings.Contains(notReady.Message, "container runtime is down") {
		t.Errorf("Ready while containerd is down: %+v", notReady)
	}
	if !notReady.LastHeartbeatTime.After(ready.LastHeartbeatTime.Time) || !notReady.LastTransitionTime.After(ready.LastTransitionTime.Time) {
		t.Errorf("heartbeat %v / transition %v not moved from %v / %v", notReady.LastHeartbeatTime, notReady.LastTransitionTime, ready.LastHeartbeatTime, ready.LastTransitionTime)
	}
	if node.Status.NodeInfo.ContainerRuntimeVersion != "containerd://1.6.20" {
		t.Errorf("runtime version lost while containerd is down: %q", node.Status.NodeInfo.ContainerRuntimeVersion)
	}
	memory := condition(node, corev1.NodeMemoryPressure)
	tm.clock.Step(10 * time.Second)
	tm.runtimeErr = nil
	node = tm.node(t)
	if condition(node, corev1.NodeReady).Status != corev1.ConditionTrue {
		t.Error("not Ready again after containerd came back")
	}
	if m := condition(node, corev1.NodeMemoryPressure); !m.LastTransitionTime.Equal(&memory.LastTransitionTime) || !m.LastHeartbeatTime.After(memory.LastHeartbeatTime.Time) {
		t.Errorf("MemoryPressure transition moved or heartbeat did not: %+v", m)
	}

	// Deleted behind minilet's back: as the kubelet, which registers once, the node stays
	// gone (its pods are garbage collected) and each status post fails, until minilet
	// restarts and registers it again.
	if err := tm.client.CoreV1().Nodes().Delete(t.Context(), testNode, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tm.UpdateStatus(t.Context()); err == nil || err.Error() != `error getting node "`+testNode+`": nodes "`+testNode+`" not found` {
		t.Errorf("status of a deleted node: %v", err)
	}
	if _, err := tm.client.CoreV1().Nodes().Get(t.Context(), testNode, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deleted node registered again: %v", err)
	}
	if err := tm.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	if node := tm.node(t); node.Spec.PodCIDR != "10.244.1.0/24" || condition(node, corev1.NodeReady).Status != corev1.ConditionTrue {
		t.Errorf("node registered at restart: podCIDR %q, conditions %v", node.Spec.PodCIDR, node.Status.Conditions)
	}
}

func TestNodeAPIPortInDaemonEndpoints(t *testing.T) {
	tm := newTestManager(t, func(c *Config) { c.Node.APIPort = 10250 })
	if err := tm.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	if port := tm.node(t).Status.DaemonEndpoints.KubeletEndpoint.Port; port != 10250 {
		t.Errorf("kubelet endpoint port %d, want 10250", port)
	}
}

// An extended resource patched into the node's status (the e2e scheduling tests' way to
// advertise one) survives our status updates, as with the kubelet; ours stay ours.
func TestStatusKeepsExtendedResourcesOthersAdded(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")}
	tm := newTestManager(t, func(c *Config) {
		c.Capacity, c.Allocatable = capacity, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m"), corev1.ResourcePods: resource.MustParse("110")}
	})
	if err := tm.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	tm.node(t)
	const foo = corev1.ResourceName("scheduling.k8s.io/foo")
	patch := `{"status":{"capacity":{"scheduling.k8s.io/foo":"5","cpu":"64"},"allocatable":{"scheduling.k8s.io/foo":"5","cpu":"64"}}}`
	if _, err := tm.client.CoreV1().Nodes().Patch(t.Context(), testNode, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	node := tm.node(t)
	if q := node.Status.Capacity[foo]; q.Value() != 5 {
		t.Errorf("capacity %v lost the patched %s", node.Status.Capacity, foo)
	}
	if q := node.Status.Allocatable[foo]; q.Value() != 5 {
		t.Errorf("allocatable %v lost the patched %s", node.Status.Allocatable, foo)
	}
	if node.Status.Capacity.Cpu().Value() != 2 || node.Status.Allocatable.Cpu().MilliValue() != 1900 {
		t.Errorf("cpu capacity %v allocatable %v, want ours (2, 1900m)", node.Status.Capacity.Cpu(), node.Status.Allocatable.Cpu())
	}

	// Taken out of capacity and allocatable (the tests' cleanup): it stays out.
	delete(node.Status.Capacity, foo)
	delete(node.Status.Allocatable, foo)
	if _, err := tm.client.CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	node = tm.node(t)
	if _, ok := node.Status.Allocatable[foo]; ok {
		t.Errorf("allocatable %v kept the removed %s", node.Status.Allocatable, foo)
	}
}

func TestRegistrationKeepsExistingNodeAndRefusesOtherPodCIDR(t *testing.T) {
	tm := newTestManager(t, nil)
	existing := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{"team": "a"}}}
	if _, err := tm.client.CoreV1().Nodes().Create(t.Context(), existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tm.ensureNode(t.Context()); err != nil {
		t.Fatal(err)
	}
	node, _ := tm.client.CoreV1().Nodes().Get(t.Context(), testNode, metav1.GetOptions{})
	if node.Labels["team"] != "a" || node.Labels[corev1.LabelHostname] != testNode || node.Labels["beta.kubernetes.io/os"] != "linux" || node.Spec.PodCIDR != "10.244.1.0/24" {
		t.Errorf("existing node not brought in line: labels %v podCIDR %q", node.Labels, node.Spec.PodCIDR)
	}
	if node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] != "true" {
		t.Errorf("existing node's annotations %v", node.Annotations)
	}

	other := newTestManager(t, func(c *Config) { c.Node.PodCIDR = "10.244.9.0/24"; c.Client = tm.client })
	if err := other.ensureNode(t.Context()); err == nil || !strings.Contains(err.Error(), "--pod-cidr") {
		t.Errorf("another podCIDR accepted: %v", err)
	}
}

type fixedStats struct{ snap *stats.Snapshot }

func (f *fixedStats) Latest() *stats.Snapshot { return f.snap }

func memorySample(available, workingSet uint64) *stats.Snapshot {
	return &stats.Snapshot{Summary: statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{AvailableBytes: &available, WorkingSetBytes: &workingSet}}}}
}

// The node's MemoryPressure follows the usage samples against --eviction-hard, with the
// kubelet's reasons, and stays for the transition period after the pressure ends.
func TestPressureConditions(t *testing.T) {
	thresholds, err := stats.ParseThresholds("memory.available<1Gi")
	if err != nil {
		t.Fatal(err)
	}
	sample := &fixedStats{snap: memorySample(512<<20, 7<<30)}
	tm := newTestManager(t, func(c *Config) { c.Stats, c.Pressure = sample, stats.NewPressure(thresholds, 5*time.Minute) })
	if err := tm.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	conditions := func() (mem, disk corev1.NodeCondition) {
		node := tm.node(t)
		return condition(node, corev1.NodeMemoryPressure), condition(node, corev1.NodeDiskPressure)
	}
	mem, disk := conditions()
	if mem.Status != corev1.ConditionTrue || mem.Reason != "KubeletHasInsufficientMemory" ||
		!strings.HasPrefix(mem.Message, "kubelet has insufficient memory available (memory.available: 536870912 available < 1073741824)") {
		t.Errorf("with 512Mi available: %+v", mem)
	}
	if disk.Status != corev1.ConditionFalse || disk.Reason != "KubeletHasNoDiskPressure" {
		t.Errorf("disk pressure without disk figures: %+v", disk)
	}
	sample.snap = memorySample(6<<30, 2<<30)
	tm.clock.Step(time.Minute)
	if mem, _ := conditions(); mem.Status != corev1.ConditionTrue {
		t.Errorf("memory pressure gone within the transition period: %+v", mem)
	}
	tm.clock.Step(5 * time.Minute)
	if mem, _ := conditions(); mem.Status != corev1.ConditionFalse || mem.Reason != "KubeletHasSufficientMemory" {
		t.Errorf("memory pressure after the transition period: %+v", mem)
	}
}

// The kubelet tells of each condition it sets and each change of the node's
// schedulability in an event on the node ("Node node-1 status is now: NodeReady"), which
// kubectl describe node shows; a status post repeating the same conditions tells nothing.
func TestNodeStatusEvents(t *testing.T) {
	var events []string
	tm := newTestManager(t, func(c *Config) {
		c.Event = func(eventType, reason, message string) {
			events = append(events, eventType+" "+reason+" "+message)
		}
	})
	if err := tm.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	expect := func(what string, want ...string) {
		t.Helper()
		if strings.Join(events, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: events\n%s\nwant\n%s", what, strings.Join(events, "\n"), strings.Join(want, "\n"))
		}
		events = nil
	}
	tm.node(t)
	expect("first status",
		"Normal NodeHasSufficientMemory Node node-1 status is now: NodeHasSufficientMemory",
		"Normal NodeHasNoDiskPressure Node node-1 status is now: NodeHasNoDiskPressure",
		"Normal NodeHasSufficientPID Node node-1 status is now: NodeHasSufficientPID",
		"Normal NodeReady Node node-1 status is now: NodeReady")
	tm.node(t)
	expect("same status again")

	tm.runtimeErr = errors.New("container runtime is down: connection refused")
	tm.node(t)
	expect("containerd down", "Normal NodeNotReady Node node-1 status is now: NodeNotReady")

	tm.runtimeErr = nil
	node := tm.node(t)
	events = nil
	node.Spec.Unschedulable = true // kubectl cordon
	if _, err := tm.client.CoreV1().Nodes().Update(t.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tm.node(t)
	expect("cordoned", "Normal NodeNotSchedulable Node node-1 status is now: NodeNotSchedulable")
	tm.node(t)
	expect("still cordoned")
	node.Spec.Unschedulable = false
	node.ResourceVersion = ""
	if _, err := tm.client.CoreV1().Nodes().Update(t.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tm.node(t)
	expect("uncordoned", "Normal NodeSchedulable Node node-1 status is now: NodeSchedulable")
}

// The node's status lists its images as the kubelet's Images setter: one entry per image
// (the names pointing to one digest together), its repo digests before its tags, at most
// 5 names, the largest images first, at most 50 of them.
func TestNodeStatusImages(t *testing.T) {
	imgs := []runtime.Image{
		{Name: "localhost/minik8s/busybox:v1", Ref: "localhost/minik8s/busybox@sha256:b1", Size: 2_000_000},
		{Name: "localhost/minik8s/pause:v1", Ref: "localhost/minik8s/pause@sha256:p1", Size: 300_000},
		{Name: "localhost/minik8s/busybox:latest", Ref: "localhost/minik8s/busybox@sha256:b1", Size: 2_000_000},
		{Name: "localhost/minik8s/netexec@sha256:n1", Ref: "localhost/minik8s/netexec@sha256:n1", Size: 9_000_000},
	}
	for i := range 6 {
		imgs = append(imgs, runtime.Image{Name: fmt.Sprintf("r.lab/many:t%d", i), Ref: "r.lab/many@sha256:m1", Size: 1_000})
	}
	for i := range 60 {
		imgs = append(imgs, runtime.Image{Name: fmt.Sprintf("r.lab/small%02d:v1", i), Ref: fmt.Sprintf("r.lab/small%02d@sha256:s%d", i, i), Size: 10})
	}
	var listErr error
	tm := newTestManager(t, func(c *Config) {
		c.Images = func(context.Context) ([]runtime.Image, error) { return imgs, listErr }
	})
	if err := tm.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := tm.node(t).Status.Images
	if len(got) != 50 {
		t.Fatalf("%d images, want the kubelet's 50 at most: %v", len(got), got)
	}
	want := []corev1.ContainerImage{
		{Names: []string{"localhost/minik8s/netexec@sha256:n1"}, SizeBytes: 9_000_000},
		{Names: []string{"localhost/minik8s/busybox@sha256:b1", "localhost/minik8s/busybox:latest", "localhost/minik8s/busybox:v1"}, SizeBytes: 2_000_000},
		{Names: []string{"localhost/minik8s/pause@sha256:p1", "localhost/minik8s/pause:v1"}, SizeBytes: 300_000},
		{Names: []string{"r.lab/many@sha256:m1", "r.lab/many:t0", "r.lab/many:t1", "r.lab/many:t2", "r.lab/many:t3"}, SizeBytes: 1_000},
		{Names: []string{"r.lab/small00@sha256:s0", "r.lab/small00:v1"}, SizeBytes: 10},
	}
	if !reflect.DeepEqual(got[:len(want)], want) {
		t.Errorf("images\n got %v\nwant %v", got[:len(want)], want)
	}

	// The runtime cannot list them: no list, as the kubelet's setter leaves it.
	listErr = errors.New("listing images: connection refused")
	if got := tm.node(t).Status.Images; len(got) != 0 {
		t.Errorf("images while the runtime cannot list them: %v", got)
	}
}
