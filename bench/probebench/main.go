// Command probebench measures what probing costs minilet: on a one-node minilab cluster it
// runs N pods with three probes each at periodSeconds=1 (liveness httpGet, readiness gRPC,
// and a second container's readiness tcpSocket; -probes picks other handlers, one probe
// each, to price them apart: exec probes run a process in the container through
// containerd, so they cost containerd, the shim and runc far more than minilet; their CPU
// is printed too) and, as the baseline from the same run,
// the same pods without probes (liveness tolerates 30 s of failures: starting 200
// containers at once on a small machine makes servers slow to answer, and killing them
// then would measure restarts, not probing), printing minilet's CPU use (share of one core over a
// window) and RSS for both. Probing's cost is the difference. -floor adds the floor
// between the two (floor.go): what a client in the node's network namespace pays for the
// same connections to the baseline pods, so the cost can be split into the lab's kernel
// work, pkg/probe's and the rest of minilet's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchlab"
	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

func main() {
	pods := flag.Int("pods", 100, "pods (each with 3 probes in the probed phase)")
	window := flag.Duration("window", 30*time.Second, "how long CPU use is measured in each phase")
	probes := flag.String("probes", "httpGet,grpc,tcpSocket", "the probes of each pod, from httpGet, grpc, tcpSocket, exec")
	floor := flag.Bool("floor", false, "between the baseline and the probed phase, measure the floor: the CPU of a client in the node's network namespace making the probes' connections to the baseline pods (bare system calls, then pkg/probe's workers)")
	perfOut := flag.String("perf", "", "after the probed phase's window, record minilet with perf record -g into this file for the window's length (and the floor clients, after theirs, into FILE.floor-MODE)")
	bin := flag.String("bin", "bin", "directory of miniapi, minilet, miniproxy")
	images := flag.String("images", "images/out", "directory of the image tarballs")
	floorClientMode := flag.String("floor-client", "", "(probebench's own child) run the floor client: bare or workers, against the pod IPs given as arguments")
	floorFor := flag.Duration("floor-for", time.Minute, "(probebench's own child) how long the floor client runs")
	flag.Parse()
	if *floorClientMode != "" {
		runFloorClient(*floorClientMode, *floorFor, flag.Args())
		return
	}
	kinds := strings.Split(*probes, ",")
	for _, k := range kinds {
		if _, ok := probeSpecs[k]; !ok {
			fmt.Fprintf(os.Stderr, "probebench: unknown probe %q (httpGet, grpc, tcpSocket, exec)\n", k)
			os.Exit(2)
		}
	}
	if *floor && strings.Join(kinds, ",") != "httpGet,grpc,tcpSocket" {
		fmt.Fprintln(os.Stderr, "probebench: -floor makes the connections of the issue's three probes: use it with the default -probes")
		os.Exit(2)
	}
	if err := run(*pods, kinds, *window, *floor, *perfOut, *bin, *images); err != nil {
		fmt.Fprintln(os.Stderr, "probebench:", err)
		os.Exit(1)
	}
}

// usage is a process's CPU over a window, as shares of one core.
type usage struct{ user, system float64 }

func (u usage) total() float64 { return u.user + u.system }

// measure is pid's CPU use over window.
func measure(pid int, window time.Duration) (usage, error) {
	user, system, err := proc.CPUShares(pid, window)
	return usage{user, system}, err
}

const rowFormat = "%-30s %-8s %8s %8s %8s %8s %11s\n"

func printRow(phase, process string, u usage, rss float64, containerd float64) {
	pct := func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }
	fmt.Printf(rowFormat, phase, process, pct(u.total()), pct(u.user), pct(u.system), fmt.Sprintf("%.1f", rss), pct(containerd))
}

func run(pods int, kinds []string, window time.Duration, floor bool, perfOut, bin, images string) error {
	ctx := context.Background()
	l, down, err := benchlab.Up(ctx, "probebench", bin, images)
	if err != nil {
		return err
	}
	defer down()
	pid, containerd, err := proc.NodePIDs(l)
	if err != nil {
		return err
	}
	// measurePhase is minilet's (or the floor client's) CPU over the window, and containerd's.
	measurePhase := func(pid int) (u usage, containerdShare float64, err error) {
		containerdBefore, err := proc.CPUTime(containerd)
		if err != nil {
			return usage{}, 0, err
		}
		start := time.Now()
		if u, err = measure(pid, window); err != nil {
			return usage{}, 0, err
		}
		containerdAfter, err := proc.CPUTime(containerd)
		return u, (containerdAfter - containerdBefore).Seconds() / time.Since(start).Seconds(), err
	}
	fmt.Printf(rowFormat, "phase", "process", "CPU", "user", "system", "RSS MiB", "containerd")
	var results [2]usage
	var containerdResults [2]float64
	var floors []usage
	for i, probed := range []bool{false, true} {
		label := "baseline (no probes)"
		if probed {
			label = strings.Join(kinds, "+") + ", 1 s"
		}
		if err := apply(ctx, l, manifest(pods, kinds, probed)); err != nil {
			return err
		}
		if err := waitReady(ctx, l, pods, 5*time.Minute); err != nil {
			return err
		}
		time.Sleep(5 * time.Second) // let start-up work settle
		if results[i], containerdResults[i], err = measurePhase(pid); err != nil {
			return err
		}
		rss, err := proc.RSSMiB(pid)
		if err != nil {
			return err
		}
		printRow(label, "minilet", results[i], rss, containerdResults[i])
		if floor && !probed {
			ips, err := podIPs(ctx, l, pods)
			if err != nil {
				return err
			}
			for _, mode := range []string{"bare", "workers"} {
				u, err := runFloor(ctx, l, mode, ips, window, perfOut, measurePhase)
				if err != nil {
					return err
				}
				floors = append(floors, u)
			}
		}
		if probed && perfOut != "" {
			if err := perfRecord(ctx, "minilet", pid, perfOut, window); err != nil {
				return err
			}
		}
		if _, err := cluster.Kubectl(ctx, l, "delete", "pods", "--all", "--wait=true", "--timeout=5m"); err != nil {
			return err
		}
	}
	rate := len(kinds) * pods
	cost := results[1].total() - results[0].total()
	fmt.Printf("probing costs minilet %.1f%% of one core for %d probes/s, %.0f µs per probe (user %.1f%%, system %.1f%%; target <= 5%% for the issue's 300 httpGet+grpc+tcpSocket probes/s); containerd %.1f%%\n",
		100*cost, rate, 1e6*cost/float64(rate), 100*(results[1].user-results[0].user), 100*(results[1].system-results[0].system), 100*(containerdResults[1]-containerdResults[0]))
	if len(floors) == 2 {
		fmt.Printf("floor for the same connections: bare client %.1f%% (%.0f µs per probe, system %.1f%%), pkg/probe's workers %.1f%% (%.0f µs); minilet above the bare floor %.1f%%, above pkg/probe's workers %.1f%%\n",
			100*floors[0].total(), 1e6*floors[0].total()/float64(rate), 100*floors[0].system,
			100*floors[1].total(), 1e6*floors[1].total()/float64(rate),
			100*(cost-floors[0].total()), 100*(cost-floors[1].total()))
	}
	return nil
}

// perfRecord records pid's stacks with perf record -g into out for window (after a
// measured window: perf's sampling costs the process it samples).
func perfRecord(ctx context.Context, what string, pid int, out string, window time.Duration) error {
	fmt.Printf("probebench: perf record -g of %s for %v into %s\n", what, window, out)
	perf := exec.CommandContext(ctx, "perf", "record", "-g", "-p", strconv.Itoa(pid), "-o", out, "--", "sleep", strconv.Itoa(int(window.Seconds())))
	if msg, err := perf.CombinedOutput(); err != nil {
		return fmt.Errorf("perf record: %v\n%s", err, msg)
	}
	return nil
}

// podIPs are the IPs of the n pods.
func podIPs(ctx context.Context, l *lab.Lab, n int) ([]string, error) {
	out, err := cluster.Kubectl(ctx, l, "get", "pods", "-o", "jsonpath={.items[*].status.podIP}")
	if err != nil {
		return nil, err
	}
	ips := strings.Fields(out)
	if len(ips) != n {
		return nil, fmt.Errorf("%d pod IPs for %d pods: %q", len(ips), n, out)
	}
	return ips, nil
}

// runFloor runs this program as the floor client (mode) in the node's network namespace
// for the window after a few seconds' start, and returns its CPU use over the window; with
// perfOut, perf records it for another window into perfOut.floor-MODE.
func runFloor(ctx context.Context, l *lab.Lab, mode string, ips []string, window time.Duration, perfOut string,
	measurePhase func(pid int) (usage, float64, error)) (usage, error) {
	self, err := os.Executable()
	if err != nil {
		return usage{}, err
	}
	const settle = 3 * time.Second // every target past its first probe
	runFor := settle + window + 2*time.Second
	if perfOut != "" {
		runFor += window
	}
	args := append([]string{"-floor-client", mode, "-floor-for", runFor.String()}, ips...)
	cmd := lab.Command(ctx, l.Nodes[0].NetNS, self, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return usage{}, fmt.Errorf("floor client: %w", err)
	}
	time.Sleep(settle)
	u, containerdShare, err := measurePhase(cmd.Process.Pid) // nsenter execs the client in place
	rss, _ := proc.RSSMiB(cmd.Process.Pid)
	if err == nil && perfOut != "" {
		err = perfRecord(ctx, "the floor client", cmd.Process.Pid, perfOut+".floor-"+mode, window)
	}
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("floor client: %v: %s", werr, out.String())
	}
	if err != nil {
		return usage{}, err
	}
	var ok, failed int
	var first string
	if _, err := fmt.Sscanf(out.String(), "%d %d %q", &ok, &failed, &first); err != nil {
		return usage{}, fmt.Errorf("floor client's report %q: %v", out.String(), err)
	}
	printRow("floor: "+map[string]string{"bare": "bare syscalls", "workers": "pkg/probe workers"}[mode], "client", u, rss, containerdShare)
	if failed > 0 {
		fmt.Printf("probebench: floor client %s: %d probes failed of %d (first: %s)\n", mode, failed, ok+failed, first)
	}
	return u, nil
}

// probeSpecs are each handler's probe and the container it is on.
var probeSpecs = map[string]struct{ container, probe string }{
	"httpGet":   {"netexec", "    livenessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, failureThreshold: 30}\n"},
	"grpc":      {"netexec", "    readinessProbe: {grpc: {port: 8082}, periodSeconds: 1}\n"},
	"tcpSocket": {"sidecar", "    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}\n"},
	"exec":      {"sidecar", "    livenessProbe: {exec: {command: [\"true\"]}, periodSeconds: 1, failureThreshold: 30}\n"},
}

func manifest(pods int, kinds []string, probed bool) string {
	probesOf := func(container string) string {
		var out string
		for _, k := range kinds {
			if probed && probeSpecs[k].container == container {
				out += probeSpecs[k].probe
			}
		}
		return out
	}
	var b strings.Builder
	for i := range pods {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n", i)
		b.WriteString("  - name: netexec\n    image: localhost/minik8s/netexec:v1\n" + probesOf("netexec"))
		b.WriteString("  - name: sidecar\n    image: localhost/minik8s/busybox:v1\n    command: [sleep, \"3600\"]\n" + probesOf("sidecar"))
	}
	return b.String()
}

func apply(ctx context.Context, l *lab.Lab, manifest string) error {
	f, err := os.CreateTemp("", "probebench-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(manifest); err != nil {
		return err
	}
	f.Close()
	_, err = cluster.Kubectl(ctx, l, "apply", "-f", f.Name())
	return err
}

// waitReady waits until n pods are Ready, printing progress.
func waitReady(ctx context.Context, l *lab.Lab, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	last := -1
	for time.Now().Before(deadline) {
		out, err := cluster.Kubectl(ctx, l, "get", "pods", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}`)
		if err == nil {
			ready := strings.Count(out, "True")
			if ready != last {
				fmt.Printf("probebench: %d/%d pods Ready\n", ready, n)
				last = ready
			}
			if ready == n {
				return nil
			}
		}
		time.Sleep(2 * time.Second)
	}
	return fmt.Errorf("%d pods not Ready within %s", n, within)
}
