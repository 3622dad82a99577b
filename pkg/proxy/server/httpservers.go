package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	corev1 "k8s.io/api/core/v1"
)

// httpServer is the metrics or the healthz server of miniproxy.
type httpServer struct {
	name    string // for the logs
	addr    string
	handler http.Handler
	// failedReason is the reason of kube-proxy's Event when the server cannot run and
	// --bind-address-hard-fail is set.
	failedReason string
	// wrap words a failure to listen (listening) or to serve as kube-proxy's server does.
	wrap func(err error, listening bool) error
}

// serverFailure is why an httpServer stopped, with its Event reason.
type serverFailure struct {
	reason string
	err    error
}

// serverRetryPeriod is how long kube-proxy waits before listening again after its metrics
// or healthz server failed.
const serverRetryPeriod = 5 * time.Second

// start listens on s.addr now (so that a /healthz that can answer does so before the first
// sync says ready), then serves until ctx ends. As kube-proxy's serveHealthz and
// serveMetrics: a failure to listen or to serve is logged and tried again every retry; with
// hardFail it is sent on failed instead, and not tried again.
func (s httpServer) start(ctx context.Context, hardFail bool, retry time.Duration, failed chan<- serverFailure, log *slog.Logger) {
	l, err := net.Listen("tcp", s.addr)
	go func() {
		for {
			listening := err != nil
			if !listening {
				err = serve(ctx, l, s.handler)
			}
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				err = s.wrap(err, listening)
				if hardFail {
					failed <- serverFailure{reason: s.failedReason, err: err}
					return
				}
				log.Error(s.name+" server failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			l, err = net.Listen("tcp", s.addr)
		}
	}()
}

// healthzServer is kube-proxy's healthz server on addr, its errors worded as kube-proxy's.
func healthzServer(addr string, h http.Handler) httpServer {
	return httpServer{name: "healthz", addr: addr, handler: h, failedReason: "FailedToStartProxierHealthcheck",
		wrap: func(err error, listening bool) error {
			if listening {
				err = fmt.Errorf("failed to start proxy healthz on %s: %w", addr, err)
			} else {
				err = fmt.Errorf("proxy healthz closed with error: %w", err)
			}
			return fmt.Errorf("healthz server failed: %w", err)
		}}
}

// metricsServer is kube-proxy's metrics server on addr: its errors are the listener's own.
func metricsServer(addr string, h http.Handler) httpServer {
	return httpServer{name: "metrics", addr: addr, handler: h, failedReason: "FailedToStartMetricServer",
		wrap: func(err error, _ bool) error { return err }}
}

// recordServerFailure records kube-proxy's Warning Event for f on node and returns f's
// error, which ends miniproxy as it ends kube-proxy.
func recordServerFailure(ctx context.Context, client *apiclient.Client, node string, f serverFailure) error {
	if err := recordEvent(ctx, client, node, corev1.EventTypeWarning, f.reason, f.err.Error()); err != nil {
		return fmt.Errorf("%w (and the %s Event could not be recorded: %v)", f.err, f.reason, err)
	}
	return f.err
}
