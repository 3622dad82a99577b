// Command pause is PID 1 of every pod sandbox. It holds the pod's namespaces open by
// doing nothing, reaps zombies re-parented to it, and exits 0 on SIGINT or SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGCHLD, syscall.SIGINT, syscall.SIGTERM)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reapZombies()
	}
}

// reapZombies collects every exited child; one SIGCHLD may stand for several exits.
func reapZombies() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
