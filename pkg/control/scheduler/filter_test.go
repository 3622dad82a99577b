package scheduler

import (
	"context"
	"fmt"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
)

// rejecting refuses the nodes whose name is in reject.
type rejecting struct{ reject map[string]bool }

func (rejecting) Name() string { return "Rejecting" }

func (r rejecting) Filter(_ context.Context, _ *framework.CycleState, _ *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	if r.reject[n.Name] {
		return framework.NewStatus(framework.Unschedulable, "node(s) were rejected")
	}
	return nil
}

// Filtering in parallel chunks records every node's rejection for the diagnosis when no
// node fits (the record is made on the first rejection, by whichever worker meets it), and
// finds the fitting nodes when some do.
func TestFindNodesThatFitInParallel(t *testing.T) {
	var nodes []*corev1.Node
	all, odd := map[string]bool{}, map[string]bool{}
	for i := range 300 {
		name := fmt.Sprintf("n%03d", i)
		nodes = append(nodes, schedtest.Node(name, nil))
		all[name] = true
		odd[name] = i%2 == 1
	}
	snap := schedtest.Snapshot(nodes)
	s := &Scheduler{snapshot: snap, nominated: newNominator()}
	pod := framework.NewPodInfo(schedtest.Pod("p", nil, 0))
	for _, c := range []struct {
		reject       map[string]bool
		fit, reasons int
	}{{all, 0, 300}, {odd, 150, 0}} {
		prof := &profile{Framework: &framework.Framework{Filters: []framework.FilterPlugin{rejecting{c.reject}}, Parallelism: 4, PercentageOfNodesToScore: 100}}
		feasible, diag, err := s.findNodesThatFit(context.Background(), prof, framework.NewCycleState(), pod, snap.List())
		if err != nil {
			t.Fatal(err)
		}
		if len(feasible) != c.fit || len(diag.NodeStatuses) != c.reasons {
			t.Errorf("%d fitting nodes and %d reasons, want %d and %d", len(feasible), len(diag.NodeStatuses), c.fit, c.reasons)
		}
		for _, n := range feasible {
			if c.reject[n.Name] {
				t.Errorf("rejected node %s found fitting", n.Name)
			}
		}
		if c.reasons > 0 {
			if got := (&framework.FitError{NumAllNodes: 300, Diagnosis: diag}).Error(); got != "0/300 nodes are available: 300 node(s) were rejected." {
				t.Errorf("fit error %q", got)
			}
		}
	}
}
