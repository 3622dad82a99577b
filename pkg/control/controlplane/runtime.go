package controlplane

import (
	"os"
	"runtime"
	"runtime/debug"
)

// TuneRuntime sets the Go runtime for miniapi's work, unless GOMAXPROCS or GOGC in the
// environment say otherwise. Its requests interleave short bursts of CPU with syscalls that
// block (the store's fdatasync, loopback writes); a P whose thread is in such a syscall is
// handed to another thread only after a delay, so with one P per core the cores sit idle
// for part of the time under load. Two Ps per core keep them busy. GOGC=200 halves how
// often the collector runs for a larger heap. docs/performance.md has the measurements.
func TuneRuntime() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
}
