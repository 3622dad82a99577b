package garbagecollector

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// object is what the collector remembers of every object it watches.
type object struct {
	gvr        schema.GroupVersionResource
	namespace  string
	name       string
	uid        types.UID
	owners     []metav1.OwnerReference
	finalizers []string
	deleting   bool
}

func objectFrom(gvr schema.GroupVersionResource, m metav1.Object) *object {
	return &object{
		gvr: gvr, namespace: m.GetNamespace(), name: m.GetName(), uid: m.GetUID(),
		owners: m.GetOwnerReferences(), finalizers: m.GetFinalizers(), deleting: m.GetDeletionTimestamp() != nil,
	}
}

func (o *object) hasFinalizer(f string) bool {
	for _, x := range o.finalizers {
		if x == f {
			return true
		}
	}
	return false
}

// graph is the ownership graph: objects by UID and, per owner UID, its dependents.
type graph struct {
	mu         sync.Mutex
	objects    map[types.UID]*object
	dependents map[types.UID]map[types.UID]bool
}

func newGraph() *graph {
	return &graph{objects: map[types.UID]*object{}, dependents: map[types.UID]map[types.UID]bool{}}
}

func (g *graph) upsert(o *object) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old := g.objects[o.uid]; old != nil {
		g.unlink(old)
	}
	g.objects[o.uid] = o
	for _, ref := range o.owners {
		if g.dependents[ref.UID] == nil {
			g.dependents[ref.UID] = map[types.UID]bool{}
		}
		g.dependents[ref.UID][o.uid] = true
	}
}

// remove forgets an object and returns its dependents.
func (g *graph) remove(uid types.UID) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old := g.objects[uid]; old != nil {
		g.unlink(old)
		delete(g.objects, uid)
	}
	return g.dependentsLocked(uid)
}

func (g *graph) unlink(o *object) {
	for _, ref := range o.owners {
		delete(g.dependents[ref.UID], o.uid)
		if len(g.dependents[ref.UID]) == 0 {
			delete(g.dependents, ref.UID)
		}
	}
}

func (g *graph) get(uid types.UID) *object {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o := g.objects[uid]; o != nil {
		c := *o
		return &c
	}
	return nil
}

func (g *graph) dependentsOf(uid types.UID) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dependentsLocked(uid)
}

func (g *graph) dependentsLocked(uid types.UID) []types.UID {
	out := make([]types.UID, 0, len(g.dependents[uid]))
	for d := range g.dependents[uid] {
		out = append(out, d)
	}
	return out
}
