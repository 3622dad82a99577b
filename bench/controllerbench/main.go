// Command controllerbench measures the workload controllers through the real API: a
// Deployment scaled from 0 to N replicas on M fake Ready nodes, timing from the scale
// request until every pod exists (the ReplicaSet controller's work) and until every pod is
// bound (the scheduler's), against a baseline from the same run: the same number of bare
// pods created by clients directly, timed until bound. It prints miniapi's peak RSS (the
// process also holds the benchmark's clients and informer).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/bench/internal/scaleload"
	"github.com/minik8s/minik8s/internal/cputime"
)

func main() {
	nodes := flag.Int("nodes", 500, "fake Ready nodes")
	replicas := flag.Int("replicas", 3000, "pods to create")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long per phase")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the Deployment phase to this file")
	memProfile := flag.String("memprofile", "", "write a heap profile (live objects after a collection) at the end to this file")
	flag.Parse()
	if err := run(*nodes, *replicas, *timeout, *cpuProfile, *memProfile); err != nil {
		fmt.Fprintln(os.Stderr, "controllerbench:", err)
		os.Exit(1)
	}
}

func run(nodes, replicas int, timeout time.Duration, cpuProfile, memProfile string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, done, err := benchapi.Start(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("controllerbench: %d nodes, %d pods, load average %s\n", nodes, replicas, benchapi.LoadAverage())
	if err := benchapi.CreateNodes(ctx, client, 0, nodes); err != nil {
		return err
	}
	watch := scaleload.NewPodWatch(ctx, client)

	// Baseline: bare pods created by 16 clients, timed until every one is bound.
	createPods, err := scaleload.BarePods(ctx, client, "baseline", replicas)
	if err != nil {
		return err
	}
	base, err := watch.Phase(ctx, "baseline", replicas, timeout, nil, createPods)
	if err != nil {
		return err
	}
	fmt.Printf("baseline (bare pods from 16 clients): all created %6.2fs (%5.0f pods/s), all bound %6.2fs (%5.0f pods/s)\n",
		base.Created.Seconds(), float64(replicas)/base.Created.Seconds(), base.Bound.Seconds(), float64(replicas)/base.Bound.Seconds())

	// The Deployment scaled from 0 to replicas.
	scale, err := scaleload.DeploymentScale(ctx, client, "bench", replicas)
	if err != nil {
		return err
	}
	stopProfile, err := benchapi.StartCPUProfile(cpuProfile)
	if err != nil {
		return err
	}
	cpu := cputime.Self()
	dep, err := watch.Phase(ctx, "bench", replicas, timeout, nil, scale)
	if err != nil {
		return err
	}
	fmt.Printf("deployment 0 -> %d:               all created %6.2fs (%5.0f pods/s), all bound %6.2fs (%5.0f pods/s)\n",
		replicas, dep.Created.Seconds(), float64(replicas)/dep.Created.Seconds(), dep.Bound.Seconds(), float64(replicas)/dep.Bound.Seconds())
	stopProfile()
	fmt.Printf("deployment phase: process CPU %.2f ms per pod\n", float64((cputime.Self()-cpu).Microseconds())/1000/float64(replicas))
	fmt.Printf("peak RSS of the process (miniapi + benchmark clients): %s\n", benchapi.PeakRSS())
	if memProfile != "" {
		if err := benchapi.WriteHeapProfile(memProfile); err != nil {
			return err
		}
	}
	cancel()
	return <-done
}
