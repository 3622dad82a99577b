package replicaset

import (
	"sync"
	"time"
)

// expectationsTTL: creations or deletions not seen after this long are given up on (a watch
// event lost for good), as kube-controller-manager's ExpectationsTimeout.
const expectationsTTL = 5 * time.Minute

// expectations count, per controller key, the pod creations and deletions asked of the API
// and not yet seen in the informer. While any are outstanding the controller does not
// manage replicas again: its cache is behind its own writes, and acting on it would create
// or delete pods twice.
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expected
}

type expected struct {
	add, del int
	since    time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, m: map[string]*expected{}}
}

// expect records adds and dels about to be asked for key.
func (e *expectations) expect(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expected{add: add, del: del, since: e.now()}
}

// observe lowers key's outstanding adds or dels by one (a creation seen, one that failed,
// or a deletion seen).
func (e *expectations) observe(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.add -= add
		x.del -= del
	}
}

// satisfied says whether key has nothing outstanding (or waited too long for it).
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	return !ok || (x.add <= 0 && x.del <= 0) || e.now().Sub(x.since) > expectationsTTL
}

// forget drops key (its controller is gone).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
