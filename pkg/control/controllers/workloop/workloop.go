// Package workloop runs a controller's work queue: the loop every controller repeats.
package workloop

import (
	"context"
	"log/slog"
	gosync "sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"k8s.io/client-go/util/workqueue"
)

// SyncFunc handles one key. An error retries the key with the queue's rate-limited
// back-off; a positive again asks for another look after that long; otherwise the key is done.
type SyncFunc[T comparable] func(ctx context.Context, key T) (again time.Duration, err error)

// Run hands keys from q to sync, one at a time, until ctx ends (it then shuts q down).
func Run[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], log *slog.Logger, sync SyncFunc[T]) {
	go func() { <-ctx.Done(); q.ShutDown() }()
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		again, err := sync(ctx, key)
		switch {
		case err != nil:
			log.Info("sync failed, will retry", "key", key, "err", err)
			q.AddRateLimited(key)
		case again > 0:
			q.Forget(key)
			q.AddAfter(key, again)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}

// RunWorkers waits for the informers' caches, then works q with n workers until ctx ends:
// every controller's Run.
func RunWorkers[T comparable](ctx context.Context, n int, q workqueue.TypedRateLimitingInterface[T], log *slog.Logger, sync SyncFunc[T], synced ...cache.InformerSynced) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	var wg gosync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Run(ctx, q, log, sync)
		}()
	}
	wg.Wait()
}
