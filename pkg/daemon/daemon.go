// Package daemon holds what every minik8s daemon sets up the same way: structured logging
// (with client-go's klog routed into it) and a context that ends on SIGINT/SIGTERM.
package daemon

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

// Logger returns a text slog logger on stderr and makes klog write through it.
func Logger(verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	klog.SetSlogLogger(log)
	return log
}

// SignalContext ends on SIGINT or SIGTERM so every loop can stop cleanly.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
