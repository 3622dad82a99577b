package noderesources

import (
	"context"
	"math"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
)

// Balanced is NodeResourcesBalancedAllocation: the closer the node's CPU and memory
// fractions (with the pod) are to each other, the higher the score.
type Balanced struct{ resources []ResourceSpec }

// NewBalanced makes the plugin over CPU and memory.
func NewBalanced() *Balanced { return &Balanced{resources: DefaultResources} }

func (*Balanced) Name() string { return BalancedName }

// Score is (1 - standard deviation of the fractions) * 100.
func (b *Balanced) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	var buf [4]float64 // CPU and memory: no allocation per node
	fractions := buf[:0]
	var total float64
	for _, r := range b.resources {
		req, alloc := requested(pod, n, r.Name, false)
		if alloc == 0 {
			continue
		}
		f := math.Min(float64(req)/float64(alloc), 1)
		fractions = append(fractions, f)
		total += f
	}
	var std float64
	switch len(fractions) {
	case 0, 1:
	case 2:
		std = math.Abs(fractions[0]-fractions[1]) / 2
	default:
		mean := total / float64(len(fractions))
		for _, f := range fractions {
			std += (f - mean) * (f - mean)
		}
		std = math.Sqrt(std / float64(len(fractions)))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore)), nil
}

func (*Balanced) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Kind: framework.KindPod, Action: framework.Delete | framework.UpdatePodScaleDown},
		{Kind: framework.KindNode, Action: framework.Add | framework.UpdateNodeAllocatable},
	}
}
