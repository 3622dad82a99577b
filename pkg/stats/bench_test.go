package stats

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/cputime"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// fakeRuntime lists prepared containers; filesystem figures are fixed.
type fakeRuntime struct{ list []runtime.Container }

func (f fakeRuntime) ListContainers(context.Context, string) ([]runtime.Container, error) {
	return f.list, nil
}
func (fakeRuntime) ContainerFsUsage(context.Context, string) (runtime.FsUsage, error) {
	return runtime.FsUsage{Bytes: 4096, Inodes: 1}, nil
}
func (fakeRuntime) ImageFs(context.Context) (runtime.FsInfo, error) { return runtime.StatFs("/") }

// podCgroups makes n pods' cgroups in the kubelet's layout (ROOT/podN/{sandbox,app}, v1
// cpuacct, memory and pids), each with a sleeping process, and the containers listing
// them.
func podCgroups(b *testing.B, n int) []runtime.Container {
	testenv.RequireRoot(b, "makes cgroups")
	if newCgroupReader().unified {
		b.Skip("makes cgroup v1 directories")
	}
	root := fmt.Sprintf("/minik8s-statsbench-%d", os.Getpid())
	var list []runtime.Container
	var procs []*exec.Cmd
	b.Cleanup(func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		for _, ctl := range []string{"cpuacct", "memory", "pids"} {
			dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", ctl, root, "*", "*"))
			for _, d := range dirs {
				_ = os.Remove(d)
			}
			dirs, _ = filepath.Glob(filepath.Join("/sys/fs/cgroup", ctl, root, "*"))
			for _, d := range dirs {
				_ = os.Remove(d)
			}
			_ = os.Remove(filepath.Join("/sys/fs/cgroup", ctl, root))
		}
	})
	for i := range n {
		uid := fmt.Sprintf("uid-%d", i)
		for _, name := range []string{"sandbox", "app"} {
			p := exec.Command("sleep", "600")
			p.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := p.Start(); err != nil {
				b.Fatal(err)
			}
			procs = append(procs, p)
			for _, ctl := range []string{"cpuacct", "memory", "pids"} {
				dir := filepath.Join("/sys/fs/cgroup", ctl, root, "pod"+uid, name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(p.Process.Pid)), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			list = append(list, runtime.Container{ID: uid + "-" + name, PodUID: uid, PodNamespace: "default", PodName: fmt.Sprintf("pod-%d", i),
				Name: name, Sandbox: name == "sandbox", State: runtime.StateRunning, PID: uint32(p.Process.Pid), StartedAt: time.Now()})
		}
	}
	return list
}

// BenchmarkSample is one housekeeping sample of 110 pods (the kubelet's default maximum)
// against the baseline of a sample with no pods (the node's own figures). Run with
// -benchtime=20x. cpu-ms/op is the CPU one sample takes (the process's, the cgroup
// library's goroutines included); %core-at-10s is what that costs at the 10 s interval.
func BenchmarkSample(b *testing.B) {
	for _, n := range []int{0, 110} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			list := podCgroups(b, n)
			c, err := New(Config{NodeName: "bench", RootDir: b.TempDir(), PodsDir: b.TempDir()}, fakeRuntime{list})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			c.Sample(ctx) // the first walks disks
			cpu0 := cputime.Self()
			b.ResetTimer()
			for range b.N {
				c.Sample(ctx)
			}
			b.StopTimer()
			cpuPerOp := (cputime.Self() - cpu0) / time.Duration(b.N)
			if got := len(c.Latest().Summary.Pods); got != n {
				b.Fatalf("%d pods sampled, want %d", got, n)
			}
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			b.ReportMetric(float64(ru.Maxrss)/1024, "maxRSS-MiB")
			b.ReportMetric(float64(cpuPerOp.Microseconds())/1000, "cpu-ms/op")
			b.ReportMetric(float64(cpuPerOp)/float64(DefaultInterval)*100, "%core-at-10s")
		})
	}
}
