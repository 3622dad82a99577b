package cache_test

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/scheduler/cache"
	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/internal/schedtest"
	corev1 "k8s.io/api/core/v1"
)

func TestAssumeConfirmForget(t *testing.T) {
	c := cache.New()
	c.AddNode(schedtest.Node("n1", nil))
	c.AddNode(schedtest.Node("n2", nil))
	s := cache.NewSnapshot()
	c.UpdateSnapshot(s)
	if len(s.List()) != 2 {
		t.Fatalf("snapshot has %d nodes", len(s.List()))
	}
	p := schedtest.Pod("p", nil, 500)
	if err := c.AssumePod(framework.NewPodInfo(p), "n1"); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	n1 := s.Get("n1")
	if len(n1.Pods) != 1 || n1.Requested.MilliCPU != 500 || !c.IsAssumed(p.UID) {
		t.Fatalf("assumed pod not accounted: %d pods, %dm", len(n1.Pods), n1.Requested.MilliCPU)
	}
	gen := s.Get("n2").Generation
	// Confirmed by the informer: no longer assumed, still counted once.
	bound := p.DeepCopy()
	bound.Spec.NodeName = "n1"
	c.AddPod(bound)
	c.UpdateSnapshot(s)
	if c.IsAssumed(p.UID) || len(s.Get("n1").Pods) != 1 || s.Get("n1") != n1 {
		t.Fatalf("confirmation: assumed %v, pods %d", c.IsAssumed(p.UID), len(s.Get("n1").Pods))
	}
	if s.Get("n2").Generation != gen {
		t.Error("an unchanged node was copied again")
	}
	// A failed binding forgets the pod.
	q := schedtest.Pod("q", nil, 100)
	_ = c.AssumePod(framework.NewPodInfo(q), "n2")
	c.ForgetPod(q)
	c.RemovePod(bound)
	c.UpdateSnapshot(s)
	if len(s.Get("n1").Pods) != 0 || len(s.Get("n2").Pods) != 0 || s.Get("n2").Requested.MilliCPU != 0 {
		t.Fatal("forgotten or removed pods still counted")
	}
	c.RemoveNode("n2")
	c.UpdateSnapshot(s)
	if len(s.List()) != 1 || s.Get("n2") != nil {
		t.Fatalf("removed node still listed: %d", len(s.List()))
	}
}

func TestZonesInterleaved(t *testing.T) {
	c := cache.New()
	for _, n := range []struct{ name, zone string }{{"a1", "a"}, {"a2", "a"}, {"a3", "a"}, {"b1", "b"}} {
		c.AddNode(schedtest.Node(n.name, map[string]string{corev1.LabelTopologyZone: n.zone}))
	}
	s := cache.NewSnapshot()
	c.UpdateSnapshot(s)
	var got []string
	for _, n := range s.List() {
		got = append(got, n.Node().Name)
	}
	if len(got) != 4 || got[0] != "a1" || got[1] != "b1" || got[2] != "a2" {
		t.Errorf("order %v, want zones interleaved a1 b1 a2 a3", got)
	}
}

// TestIndexIsListPosition: every node of a snapshot carries its position in List, through
// in-place updates of changed nodes and rebuilds when nodes come, go or change zone.
func TestIndexIsListPosition(t *testing.T) {
	c := cache.New()
	s := cache.NewSnapshot()
	check := func(step string) {
		t.Helper()
		c.UpdateSnapshot(s)
		for i, n := range s.List() {
			if n.Index != i {
				t.Errorf("%s: %s has index %d at position %d", step, n.Name, n.Index, i)
			}
		}
	}
	for _, name := range []string{"a1", "a2", "b1", "b2"} {
		c.AddNode(schedtest.Node(name, map[string]string{corev1.LabelTopologyZone: name[:1]}))
	}
	check("added")
	c.AddPod(schedtest.On(schedtest.Pod("p", nil, 100), "b2"))
	check("a pod placed")
	c.AddNode(schedtest.Node("a0", map[string]string{corev1.LabelTopologyZone: "a"}))
	check("a node joined")
	c.UpdateNode(schedtest.Node("b2", map[string]string{corev1.LabelTopologyZone: "c"}))
	check("a node changed zone")
	c.RemoveNode("a1")
	check("a node left")
}
