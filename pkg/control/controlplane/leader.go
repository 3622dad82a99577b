package controlplane

import (
	"context"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElection are kube-controller-manager's and kube-scheduler's --leader-elect settings:
// with several miniapi on one etcd, one runs the controllers and one the scheduler.
type LeaderElection struct {
	Enabled       bool          // --leader-elect
	LeaseDuration time.Duration // --leader-elect-lease-duration (15s)
	RenewDeadline time.Duration // --leader-elect-renew-deadline (10s)
	RetryPeriod   time.Duration // --leader-elect-retry-period (2s)
}

// electionIdentity names this process in the Leases: host name and a random id, so two
// miniapi on one host (or a restarted one) are told apart.
func electionIdentity(host string) string {
	return host + "_" + string(uuid.NewUUID())
}

// whileLeading runs lead for as long as this process holds the Lease kube-system/name, and
// stands for election again after losing it; lead's context ends with the leadership.
// Without election lead runs at once, until ctx ends. Either way lead runs on a goroutine
// counted in running, and the election's own goroutines are waited for.
func whileLeading(ctx context.Context, running *sync.WaitGroup, client kubernetes.Interface, le LeaderElection, name, identity string, log *slog.Logger, lead func(context.Context)) {
	if !le.Enabled {
		running.Go(func() { lead(ctx) })
		return
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	running.Go(func() {
		for ctx.Err() == nil {
			// client-go starts OnStartedLeading on a goroutine it does not wait for: the
			// term waits for lead to return before standing again (or before Run ends).
			var term leadership
			leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
				Lock: lock, Name: name, ReleaseOnCancel: true,
				LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(ctx context.Context) {
						term.lead(func() {
							log.Info("became leader", "lease", name, "identity", identity)
							lead(ctx)
						})
					},
					OnStoppedLeading: func() { log.Info("stopped leading", "lease", name, "identity", identity) },
				},
			})
			term.end()
		}
	})
}

// leadership is one term of an election: lead runs its work unless the term has already
// ended, and end waits for work that started.
type leadership struct {
	mu      sync.Mutex
	ended   bool
	working sync.WaitGroup
}

func (l *leadership) lead(work func()) {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.working.Add(1)
	l.mu.Unlock()
	defer l.working.Done()
	work()
}

func (l *leadership) end() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	l.working.Wait()
}
