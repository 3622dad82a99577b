package podsync

import (
	"slices"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/agent/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// terminationOrder is the kubelet's order of stopping a pod with sidecars: every
// container's preStop hook runs at once, then the regular containers stop, and only
// after them the sidecars, in the reverse order of their definition, so a sidecar still
// serves the hooks and the last requests of the containers it helps.
type terminationOrder struct {
	clock   clock.Clock
	stopped map[string]*stopped // by running container; not changed once made
	waitFor map[string][]string // the running containers each must outlast
}

// stopped is closed once a container has stopped.
type stopped struct {
	ch   chan struct{}
	once sync.Once
}

// newTerminationOrder orders the running containers of pod; nil when pod has no
// sidecars (nothing waits).
func newTerminationOrder(c clock.Clock, pod *corev1.Pod, running []string) *terminationOrder {
	if pod == nil || !slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return status.IsSidecar(&c) }) {
		return nil
	}
	o := &terminationOrder{clock: c, stopped: map[string]*stopped{}, waitFor: map[string][]string{}}
	for _, name := range running {
		o.stopped[name] = &stopped{ch: make(chan struct{})}
	}
	var outlast []string
	for _, c := range pod.Spec.Containers {
		if _, ok := o.stopped[c.Name]; ok {
			outlast = append(outlast, c.Name)
		}
	}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		if !status.IsSidecar(c) {
			continue
		}
		o.waitFor[c.Name] = slices.Clone(outlast)
		if _, ok := o.stopped[c.Name]; ok {
			outlast = append(outlast, c.Name)
		}
	}
	return o
}

// waitForTurn waits until the containers name must outlast have stopped, at most
// limit, and returns how long it waited.
func (o *terminationOrder) waitForTurn(name string, limit time.Duration) time.Duration {
	if o == nil || len(o.waitFor[name]) == 0 {
		return 0
	}
	start := o.clock.Now()
	timer := o.clock.NewTimer(limit)
	defer timer.Stop()
	for _, other := range o.waitFor[name] {
		select {
		case <-o.stopped[other].ch:
		case <-timer.C():
			return o.clock.Since(start)
		}
	}
	return o.clock.Since(start)
}

// terminated records that name has stopped.
func (o *terminationOrder) terminated(name string) {
	if o == nil {
		return
	}
	if st, ok := o.stopped[name]; ok {
		st.once.Do(func() { close(st.ch) })
	}
}
