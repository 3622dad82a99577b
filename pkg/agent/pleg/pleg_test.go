package pleg

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/runtime"
)

type lister []runtime.Container

func (l *lister) ListContainers(context.Context, string) ([]runtime.Container, error) { return *l, nil }

type gauge float64

func (g *gauge) Set(v float64) { *g = gauge(v) }

// TestRelistWakesChangedPods: a pod whose containers changed state, or one of which went
// without being seen exited, is woken; one that stayed as it was, or only lost exited
// containers, is not; the gauge counts pods with a running sandbox.
func TestRelistWakesChangedPods(t *testing.T) {
	l := &lister{
		{ID: "a-sb", PodUID: "a", Sandbox: true, State: runtime.StateRunning},
		{ID: "a-app", PodUID: "a", State: runtime.StateRunning},
		{ID: "b-sb", PodUID: "b", Sandbox: true, State: runtime.StateRunning},
		{ID: "c-sb", PodUID: "c", Sandbox: true, State: runtime.StateExited},
	}
	var woken []types.UID
	var running gauge
	r := New(Config{Runtime: l, Wake: func(uid types.UID) { woken = append(woken, uid) }, Running: &running})
	if err := r.relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	slices.Sort(woken)
	if !slices.Equal(woken, []types.UID{"a", "b", "c"}) || running != 2 {
		t.Fatalf("first relist woke %v, running %v; want every pod, 2", woken, running)
	}

	woken = nil
	(*l)[1].State = runtime.StateExited // a's app exits
	*l = (*l)[:3]                       // c's containers are gone, its sandbox seen exited
	if err := r.relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(woken, []types.UID{"a"}) || running != 2 {
		t.Errorf("second relist woke %v, running %v; want a only (c's exited containers were removed), 2", woken, running)
	}

	woken = nil
	*l = slices.Delete(*l, 1, 2) // a's exited app is removed
	if err := r.relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(woken) != 0 {
		t.Errorf("removing an exited container woke %v; the kubelet's PLEG does not sync on ContainerRemoved", woken)
	}

	*l = (*l)[:1] // b's running sandbox is gone without an exit seen
	if err := r.relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(woken, []types.UID{"b"}) {
		t.Errorf("a running container gone woke %v, want b (ContainerDied)", woken)
	}
}
