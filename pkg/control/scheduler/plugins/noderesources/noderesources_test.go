package noderesources

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func cpu(m int64) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(m, resource.DecimalSI)}
}

func TestFitFilter(t *testing.T) {
	nodes := []*corev1.Node{schedtest.Node("n1", nil)}
	full := schedtest.Node("full", nil)
	full.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("1")
	gpuNode := schedtest.Node("gpu", nil)
	gpuNode.Status.Allocatable["example.com/gpu"] = resource.MustParse("2")
	busy := schedtest.On(schedtest.Pod("busy", nil, 3000), "n1")
	fit, _ := NewFit(nil)

	initBig := schedtest.Pod("p", nil, 500)
	initBig.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: cpu(1100)}}}
	initSmall := schedtest.Pod("p", nil, 500)
	initSmall.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: cpu(800)}}}
	sidecar := schedtest.Pod("p", nil, 500)
	sidecar.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Requests: cpu(600)}}}
	overhead := schedtest.Pod("p", nil, 500)
	overhead.Spec.Overhead = cpu(600)
	gpu := schedtest.Pod("p", nil, 0)
	gpu.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/gpu": resource.MustParse("3")}

	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		pod   *corev1.Pod
		node  string
		want  string
	}{
		// 1000m free on n1 (4 CPUs, 3000m used).
		{"fits", nodes, schedtest.Pod("p", nil, 1000), "n1", ""},
		{"cpu short", nodes, schedtest.Pod("p", nil, 1001), "n1", "Insufficient cpu"},
		{"an init container counts only as the largest of it and the app containers", nodes, initSmall, "n1", ""},
		{"an init container larger than the app containers sets the request", nodes, initBig, "n1", "Insufficient cpu"},
		{"a sidecar adds to the app containers", nodes, sidecar, "n1", "Insufficient cpu"},
		{"pod overhead adds", nodes, overhead, "n1", "Insufficient cpu"},
		{"pod slots", []*corev1.Node{full}, schedtest.Pod("p", nil, 0), "full", ""},
		{"extended resource short", []*corev1.Node{gpuNode}, gpu, "gpu", "Insufficient example.com/gpu"},
		{"extended resource the node lacks", nodes, gpu, "n1", "Insufficient example.com/gpu"},
	} {
		snap := schedtest.Snapshot(tc.nodes, busy)
		if got := schedtest.Filter(fit, snap, tc.pod)[tc.node]; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A node already holding its pod limit takes no more.
	snap := schedtest.Snapshot([]*corev1.Node{full}, schedtest.On(schedtest.Pod("one", nil, 0), "full"))
	if got := schedtest.Filter(fit, snap, schedtest.Pod("p", nil, 0))["full"]; got != "Too many pods" {
		t.Errorf("full node: %q", got)
	}
	// Every short resource is named, as kube-scheduler lists them.
	both := schedtest.Pod("p", nil, 5000)
	both.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("9Gi")
	if got := schedtest.Filter(fit, schedtest.Snapshot(nodes), both)["n1"]; got != "Insufficient cpu, Insufficient memory" {
		t.Errorf("two resources short: %q", got)
	}
}

func TestScores(t *testing.T) {
	nodes := []*corev1.Node{schedtest.Node("empty", nil), schedtest.Node("half", nil)}
	pods := []*corev1.Pod{schedtest.On(schedtest.Pod("a", nil, 2000), "half")}
	pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("4Gi")
	snap := schedtest.Snapshot(nodes, pods...)
	pod := schedtest.Pod("p", nil, 0) // no requests: scored at kube-scheduler's 100m / 200Mi
	least, _ := NewFit(nil)
	if s := schedtest.Score(least, snap, pod); !(s["empty"] > s["half"]) || s["empty"] != 97 {
		t.Errorf("LeastAllocated: %v, want empty (97) above half", s)
	}
	args := &FitArgs{}
	args.ScoringStrategy.Type = MostAllocated
	most, err := NewFit(args)
	if err != nil {
		t.Fatal(err)
	}
	if s := schedtest.Score(most, snap, pod); !(s["half"] > s["empty"]) {
		t.Errorf("MostAllocated: %v, want half above empty", s)
	}
	args.ScoringStrategy.Type = RequestedToCapacityRatio
	args.ScoringStrategy.Shape = []UtilizationShapePoint{{Utilization: 0, Score: 10}, {Utilization: 100, Score: 0}}
	ratio, err := NewFit(args)
	if err != nil {
		t.Fatal(err)
	}
	if s := schedtest.Score(ratio, snap, pod); !(s["empty"] > s["half"]) {
		t.Errorf("RequestedToCapacityRatio falling shape: %v, want empty above half", s)
	}
	args.ScoringStrategy.Shape = nil
	if _, err := NewFit(args); err == nil {
		t.Error("RequestedToCapacityRatio without a shape accepted")
	}
	args.ScoringStrategy.Type = "Fancy"
	if _, err := NewFit(args); err == nil {
		t.Error("unknown strategy accepted")
	}

	// Balanced: a CPU-only pod is better placed where memory is already used.
	memNode := schedtest.On(schedtest.Pod("m", nil, 0), "half")
	memNode.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}
	snap = schedtest.Snapshot(nodes, memNode)
	if s := schedtest.Score(NewBalanced(), snap, schedtest.Pod("p", nil, 2000)); s["half"] != 100 || s["empty"] != 75 {
		t.Errorf("BalancedAllocation: %v, want half 100 (50%%/50%%) and empty 75 (50%%/0%%)", s)
	}
}
