package daemon

import (
	"log/slog"

	sd "github.com/coreos/go-systemd/v22/daemon"
)

// NotifyReady tells systemd (a Type=notify unit) that the daemon is ready: READY=1 on
// $NOTIFY_SOCKET. Without that variable (not started by systemd) it does nothing. Call it
// once the daemon serves, not when it merely started, so units ordered After= it and
// `systemctl start` see a working daemon.
func NotifyReady() {
	sent, err := sd.SdNotify(true, sd.SdNotifyReady) // unset: children must not speak for us
	switch {
	case err != nil:
		slog.Error("tell systemd the daemon is ready (READY=1)", "err", err)
	case sent:
		slog.Info("told systemd the daemon is ready (READY=1)")
	}
}
