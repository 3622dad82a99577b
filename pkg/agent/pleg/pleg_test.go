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

// TestRelistWakesChangedPods: a pod whose containers changed state or went is woken, one
// that stayed as it was is not, and the gauge counts pods with a running sandbox.
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
	*l = (*l)[:3]                       // c's containers are gone
	if err := r.relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	slices.Sort(woken)
	if !slices.Equal(woken, []types.UID{"a", "c"}) || running != 2 {
		t.Errorf("second relist woke %v, running %v; want a and c, 2", woken, running)
	}
}
