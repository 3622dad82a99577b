package benchapi

import (
	"cmp"
	"sync"
	"time"
)

// Latencies are the times of a phase's requests that succeeded, and its wall time.
type Latencies struct {
	Each []time.Duration
	Wall time.Duration
}

// PerSecond is how many requests succeeded a second of the phase.
func (l Latencies) PerSecond() float64 { return float64(len(l.Each)) / l.Wall.Seconds() }

// P is the pct-th percentile (0..100), to 10µs; it sorts l.Each.
func (l Latencies) P(pct float64) time.Duration {
	return Percentile(l.Each, pct/100).Round(10 * time.Microsecond)
}

// ClosedLoop runs one worker per client, each sending its next request when the last one
// answered: worker w calls do(c, w, i) for i = 0, 1, ... while more(i) holds, and stops at
// its first error. It returns the latencies once every worker has stopped, with the first
// error of any.
func ClosedLoop[C any](clients []C, more func(i int) bool, do func(c C, w, i int) error) (Latencies, error) {
	var mu sync.Mutex
	var all Latencies
	var first error
	start := time.Now()
	var wg sync.WaitGroup
	for w, c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for i := 0; more(i); i++ {
				t := time.Now()
				if err := do(c, w, i); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			all.Each = append(all.Each, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	all.Wall = time.Since(start)
	return all, first
}
