// Package noderesources holds kube-scheduler's NodeResourcesFit (filter: requests fit the
// node's allocatable; score: LeastAllocated, MostAllocated or RequestedToCapacityRatio)
// and NodeResourcesBalancedAllocation (score: CPU and memory used evenly).
package noderesources

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
)

// Names in profiles.
const (
	FitName      = "NodeResourcesFit"
	BalancedName = "NodeResourcesBalancedAllocation"
)

// Scoring strategies of NodeResourcesFitArgs.
const (
	LeastAllocated           = "LeastAllocated"
	MostAllocated            = "MostAllocated"
	RequestedToCapacityRatio = "RequestedToCapacityRatio"
)

// ResourceSpec is a resource scored and its weight.
type ResourceSpec struct {
	Name   corev1.ResourceName `json:"name"`
	Weight int64               `json:"weight"`
}

// UtilizationShapePoint is a point of RequestedToCapacityRatio's score function:
// utilization 0..100 maps to score 0..10.
type UtilizationShapePoint struct {
	Utilization int64 `json:"utilization"`
	Score       int64 `json:"score"`
}

// FitArgs are NodeResourcesFitArgs' scoring strategy.
type FitArgs struct {
	ScoringStrategy struct {
		Type      string                  `json:"type"`
		Resources []ResourceSpec          `json:"resources"`
		Shape     []UtilizationShapePoint `json:"requestedToCapacityRatio"`
	} `json:"scoringStrategy"`
}

// DefaultResources are scored when the config names none.
var DefaultResources = []ResourceSpec{{Name: corev1.ResourceCPU, Weight: 1}, {Name: corev1.ResourceMemory, Weight: 1}}

// Fit is NodeResourcesFit.
type Fit struct {
	strategy  string
	resources []ResourceSpec
	shape     []UtilizationShapePoint
}

// NewFit makes NodeResourcesFit with args (nil: LeastAllocated on cpu and memory).
func NewFit(args *FitArgs) (*Fit, error) {
	f := &Fit{strategy: LeastAllocated, resources: DefaultResources}
	if args == nil {
		return f, nil
	}
	s := args.ScoringStrategy
	if s.Type != "" {
		f.strategy = s.Type
	}
	if len(s.Resources) > 0 {
		f.resources = s.Resources
	}
	switch f.strategy {
	case LeastAllocated, MostAllocated:
	case RequestedToCapacityRatio:
		if len(s.Shape) == 0 {
			return nil, fmt.Errorf("NodeResourcesFit: scoringStrategy.requestedToCapacityRatio.shape is required for %s", f.strategy)
		}
		for i, p := range s.Shape {
			if p.Utilization < 0 || p.Utilization > 100 || p.Score < 0 || p.Score > 10 || (i > 0 && p.Utilization <= s.Shape[i-1].Utilization) {
				return nil, fmt.Errorf("NodeResourcesFit: shape point %d (utilization %d, score %d): utilization must rise within 0..100 and score be within 0..10", i, p.Utilization, p.Score)
			}
		}
		f.shape = s.Shape
	default:
		return nil, fmt.Errorf("NodeResourcesFit: scoringStrategy.type %q is not one of %s, %s, %s", f.strategy, LeastAllocated, MostAllocated, RequestedToCapacityRatio)
	}
	for _, r := range f.resources {
		if r.Weight <= 0 || r.Weight > 100 {
			return nil, fmt.Errorf("NodeResourcesFit: resource %s weight %d is not within 1..100", r.Name, r.Weight)
		}
	}
	return f, nil
}

func (*Fit) Name() string { return FitName }

// Filter checks pod count and every requested resource against what is left.
func (f *Fit) Filter(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	var reasons []string
	if int64(len(n.Pods))+1 > n.Allocatable.AllowedPodNumber {
		reasons = append(reasons, "Too many pods")
	}
	req := pod.Requests
	if req.MilliCPU > 0 && req.MilliCPU > n.Allocatable.MilliCPU-n.Requested.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if req.Memory > 0 && req.Memory > n.Allocatable.Memory-n.Requested.Memory {
		reasons = append(reasons, "Insufficient memory")
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > n.Allocatable.EphemeralStorage-n.Requested.EphemeralStorage {
		reasons = append(reasons, "Insufficient ephemeral-storage")
	}
	for name, want := range req.Scalar {
		if want > 0 && want > n.Allocatable.Scalar[name]-n.Requested.Scalar[name] {
			reasons = append(reasons, "Insufficient "+string(name))
		}
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

// requested is what the node would hold with the pod: CPU and memory counted with
// kube-scheduler's non-zero defaults for containers that request nothing.
func requested(pod *framework.PodInfo, n *framework.NodeInfo, name corev1.ResourceName, nonZero bool) (int64, int64) {
	alloc := n.Allocatable.Get(name)
	switch {
	case nonZero && name == corev1.ResourceCPU:
		return n.NonZeroCPU + pod.NonZeroCPU, alloc
	case nonZero && name == corev1.ResourceMemory:
		return n.NonZeroMem + pod.NonZeroMem, alloc
	}
	return n.Requested.Get(name) + pod.Requests.Get(name), alloc
}

// Score is the weighted mean over the resources of the strategy's per-resource score.
func (f *Fit) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	var sum, weights int64
	for _, r := range f.resources {
		req, alloc := requested(pod, n, r.Name, true)
		if alloc == 0 {
			continue
		}
		var s int64
		switch f.strategy {
		case LeastAllocated:
			if req <= alloc {
				s = (alloc - req) * framework.MaxNodeScore / alloc
			}
		case MostAllocated:
			s = min(req, alloc) * framework.MaxNodeScore / alloc
		case RequestedToCapacityRatio:
			s = f.shapeScore(min(req, alloc) * 100 / alloc)
		}
		sum += s * r.Weight
		weights += r.Weight
	}
	if weights == 0 {
		return 0, nil
	}
	return sum / weights, nil
}

// shapeScore interpolates the shape at utilization u (0..100), scaled to 0..100.
func (f *Fit) shapeScore(u int64) int64 {
	pts := f.shape
	if u <= pts[0].Utilization {
		return pts[0].Score * 10
	}
	for i := 1; i < len(pts); i++ {
		if u <= pts[i].Utilization {
			a, b := pts[i-1], pts[i]
			return (a.Score*10*(b.Utilization-u) + b.Score*10*(u-a.Utilization)) / (b.Utilization - a.Utilization)
		}
	}
	return pts[len(pts)-1].Score * 10
}

func (*Fit) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Kind: framework.KindPod, Action: framework.Delete | framework.UpdatePodScaleDown},
		{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeAllocatable},
	}
}
