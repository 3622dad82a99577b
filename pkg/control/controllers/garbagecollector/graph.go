package garbagecollector

import (
	"slices"
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

// deletingDependents says the object is being deleted in the foreground: it waits for the
// dependents that block it.
func (o *object) deletingDependents() bool {
	return o.deleting && o.hasFinalizer(metav1.FinalizerDeleteDependents)
}

// blocks says the object's reference to owner holds the owner's foreground deletion.
func (o *object) blocks(owner types.UID) bool {
	for _, ref := range o.owners {
		if ref.UID == owner && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

func (o *object) hasFinalizer(f string) bool { return hasFinalizer(o.finalizers, f) }

func hasFinalizer(finalizers []string, f string) bool {
	return slices.Contains(finalizers, f)
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

// upsert records an object and returns what the graph held of it before, if anything.
func (g *graph) upsert(o *object) *object {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.objects[o.uid]
	if old != nil {
		g.unlink(old)
	}
	g.objects[o.uid] = o
	for _, ref := range o.owners {
		if g.dependents[ref.UID] == nil {
			g.dependents[ref.UID] = map[types.UID]bool{}
		}
		g.dependents[ref.UID][o.uid] = true
	}
	return old
}

// remove forgets an object and returns what the graph held of it (nil if nothing) and
// its dependents.
func (g *graph) remove(uid types.UID) (*object, []types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.objects[uid]
	if old != nil {
		g.unlink(old)
		delete(g.objects, uid)
	}
	return old, g.dependentsLocked(uid)
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

// withUnseenOwners are the objects with an owner reference to an object the graph has not
// seen.
func (g *graph) withUnseenOwners() []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []types.UID
	for owner, deps := range g.dependents {
		if g.objects[owner] == nil {
			for d := range deps {
				out = append(out, d)
			}
		}
	}
	return out
}
