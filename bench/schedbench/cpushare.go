package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/google/pprof/profile"
)

// Function-name prefixes that make a CPU sample the scheduler's: its goroutines (the cycle,
// the parallel filter and score workers, the bind goroutines with their client call) and its
// informer handlers, and the API server's handler of pods/binding.
const (
	schedulerPrefix = "github.com/minik8s/minik8s/pkg/control/scheduler"
	bindingHandler  = "github.com/minik8s/minik8s/pkg/control/apiserver.(*Server).serveBinding"
)

// cpuShare profiles the process's CPU while a scenario runs and splits it into the
// scheduler's share and the binding handler's share. The watch fan-out and decoding of the
// pods the shared informers receive, the Events' creation and the Go collector's background
// marking are not attributed to anyone: they count only in the process total.
type cpuShare struct {
	buf  bytes.Buffer
	file string // also write the profile here ("" : no)
}

func startCPUShare(file string) (*cpuShare, error) {
	c := &cpuShare{file: file}
	if err := pprof.StartCPUProfile(&c.buf); err != nil {
		return nil, err
	}
	return c, nil
}

// stop ends the profile and returns the CPU time of the scheduler and of the binding handler.
func (c *cpuShare) stop() (scheduling, binding float64, err error) {
	pprof.StopCPUProfile()
	if c.file != "" {
		if err := os.WriteFile(c.file, c.buf.Bytes(), 0o644); err != nil {
			return 0, 0, err
		}
	}
	p, err := profile.Parse(&c.buf)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the CPU profile: %w", err)
	}
	cpu := len(p.SampleType) - 1 // the last value is CPU nanoseconds
	for _, s := range p.Sample {
		switch owner(s) {
		case "binding":
			binding += float64(s.Value[cpu])
		case "scheduler":
			scheduling += float64(s.Value[cpu])
		}
	}
	return scheduling / 1e9, binding / 1e9, nil
}

func owner(s *profile.Sample) string {
	sched := false
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			name := line.Function.Name
			if name == bindingHandler {
				return "binding"
			}
			if strings.HasPrefix(name, schedulerPrefix) {
				sched = true
			}
		}
	}
	if sched {
		return "scheduler"
	}
	return ""
}
