package controlplane

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// DefaultMemoryLimit is miniapi's --memory-limit: under bench/membench's loads it keeps
// miniapi's peak RSS near 325 MiB (the Deployment 0 -> 3 000) and 340 MiB (the API load,
// 10 000 pods) without a cost in speed the runs could show; 200Mi slowed the Deployment
// by ~1.5x. docs/performance.md has the measurements.
const DefaultMemoryLimit = 250 << 20

// headroomPeriod is how often the memory limit is checked against the live heap.
const headroomPeriod = 5 * time.Second

// TuneRuntime sets the Go runtime for miniapi's work, unless GOMAXPROCS, GOGC or GOMEMLIMIT
// in the environment say otherwise. Its requests interleave short bursts of CPU with
// syscalls that block (the store's fdatasync, loopback writes); a P whose thread is in such
// a syscall is handed to another thread only after a delay, so with one P per core the
// cores sit idle for part of the time under load. Two Ps per core keep them busy. GOGC=200
// halves how often the collector runs for a larger heap; memoryLimit (bytes, 0: none) is the
// soft limit under which the runtime keeps its memory by collecting more often, so that
// GOGC's room does not triple a large heap. Until ctx ends, the limit grows with the live
// heap (see headroomLimit): a cluster larger than it was set for then costs memory rather
// than a collector that never stops. docs/performance.md has the measurements.
func TuneRuntime(ctx context.Context, memoryLimit int64) {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" && memoryLimit > 0 {
		debug.SetMemoryLimit(memoryLimit)
		go keepHeadroom(ctx, memoryLimit)
	}
}

// keepHeadroom sets the memory limit from the live heap every headroomPeriod until ctx ends.
func keepHeadroom(ctx context.Context, limit int64) {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(headroomPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(live)
		debug.SetMemoryLimit(headroomLimit(limit, int64(live[0].Value.Uint64())))
	}
}

// headroomLimit is the memory limit for a live heap: the one asked for, or twice the live
// heap once that is more. Under a limit the live heap nearly fills, Go collects without
// pause (up to half the CPU, which halves throughput); twice the live heap is GOGC=100's
// room.
func headroomLimit(asked, live int64) int64 { return max(asked, 2*live) }
