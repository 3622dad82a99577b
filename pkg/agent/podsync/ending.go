package podsync

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Ending is how the node ends a pod that should still run (an eviction, a deadline): the
// reason, message and condition it fails with, and how long its containers get to stop.
type Ending struct {
	Reason, Message string
	Condition       *corev1.PodCondition // added to the failed pod's status (DisruptionTarget)
	Grace           time.Duration
	// Rejected: the node refused the pod at admission, before anything of it started. Its
	// status is then the kubelet's rejectPod one alone (phase, reason, message, qosClass,
	// startTime): no container statuses, no conditions of the node's, no IPs.
	Rejected bool
}

// End asks the pod's next sync to end it as e says (the kubelet's kill with a status
// function); done closes once its containers have stopped and its status is written.
// Wake the pod's worker for it to happen now.
func (s *Syncer) End(uid types.UID, e Ending) (done <-chan struct{}) {
	return s.endings.add(uid, e)
}

// endings are the pods asked to end, until the pod is seen finished or deleted.
type endings struct {
	mu    sync.Mutex
	byUID map[types.UID]*ending
}

type ending struct {
	Ending
	done chan struct{}
	once sync.Once
}

func (e *ending) finish() { e.once.Do(func() { close(e.done) }) }

func (es *endings) add(uid types.UID, e Ending) <-chan struct{} {
	es.mu.Lock()
	defer es.mu.Unlock()
	if cur, ok := es.byUID[uid]; ok { // asked already: the first ending stands
		return cur.done
	}
	if es.byUID == nil {
		es.byUID = map[types.UID]*ending{}
	}
	en := &ending{Ending: e, done: make(chan struct{})}
	es.byUID[uid] = en
	return en.done
}

func (es *endings) of(uid types.UID) *ending {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.byUID[uid]
}

func (es *endings) forget(uid types.UID) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if en, ok := es.byUID[uid]; ok {
		en.finish()
		delete(es.byUID, uid)
	}
}
