// Package cputime reads the CPU time a process used, the figure benchmarks print beside
// wall time: on a shared machine it does not depend on how much of the CPU the process was
// given.
package cputime

import (
	"syscall"
	"time"
)

// Self is the CPU time (user + system) this process used so far, 0 if the kernel does not
// say.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
