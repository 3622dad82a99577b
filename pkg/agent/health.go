package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// housekeepingStall is how long the sync loop may go without a housekeeping
// pass before /healthz reports minilet unhealthy.
const housekeepingStall = 2 * time.Minute

// Healthy says whether the sync loop is running and recently made a pass.
func (a *Agent) Healthy() error {
	last := a.lastHousekeeping.Load()
	if last == 0 {
		return errors.New("sync loop has not started yet")
	}
	if since := a.clock.Since(time.Unix(0, last)); since > housekeepingStall {
		return fmt.Errorf("sync loop made no pass for %s", since.Round(time.Second))
	}
	return nil
}

func (a *Agent) healthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := a.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	})
	mux.Handle("/metrics", a.MetricsHandler())
	if a.cfg.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// MetricsHandler serves the agent's metrics (on /healthz's address and the node API).
func (a *Agent) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(a.metrics.registry, promhttp.HandlerOpts{})
}

// serveHealth serves /healthz and /metrics on addr until ctx ends; its goroutines join wg.
func (a *Agent) serveHealth(ctx context.Context, wg *sync.WaitGroup, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for healthz on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: a.healthHandler(), ReadHeaderTimeout: 10 * time.Second}
	wg.Go(func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdownCtx)
	})
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("healthz server stopped", "addr", addr, "err", err)
		}
	})
	return nil
}
