package stats

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
)

// TestCgroupReader reads a real cgroup holding a process that burns CPU and holds memory.
func TestCgroupReader(t *testing.T) {
	testenv.RequireRoot(t, "makes cgroups")
	r := newCgroupReader()
	if r.unified {
		t.Skip("this test makes cgroup v1 directories") // the reader's v2 path is the library's Stat
	}
	name := fmt.Sprintf("/minik8s-statstest-%d", os.Getpid())
	var dirs []string
	for _, ctl := range []string{"cpuacct", "memory", "pids"} {
		dir := filepath.Join("/sys/fs/cgroup", ctl, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	// A shell that allocates ~20 MiB of string and then spins.
	cmd := exec.Command("sh", "-c", `read x; s=$(head -c 20000000 /dev/zero | tr '\0' a); while :; do :; done`)
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, d := range dirs {
			for i := 0; i < 50 && os.Remove(d) != nil; i++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = stdin.Write([]byte("go\n"))
	got, err := r.processCgroup(uint32(cmd.Process.Pid))
	if err != nil || got != name {
		t.Fatalf("processCgroup = %q, %v; want %q", got, err, name)
	}
	c := &Collector{cg: r, prevCPU: map[string]cpuPoint{}}
	// The shell holds its 20 MB once it has read it all (slow on a loaded machine).
	var u1 usage
	for deadline := time.Now().Add(20 * time.Second); ; {
		if u1, err = r.read(name); err != nil {
			t.Fatal(err)
		}
		if u1.rss >= 10<<20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	first := c.cpuStats(name, u1, time.Now())
	if first.UsageNanoCores != nil {
		t.Error("a rate from one sample")
	}
	time.Sleep(1500 * time.Millisecond)
	u2, err := r.read(name)
	if err != nil {
		t.Fatal(err)
	}
	st := c.cpuStats(name, u2, time.Now())
	// A spinning shell gets a share of a core however loaded the machine is; no more than
	// the two cores there are.
	if st.UsageNanoCores == nil || *st.UsageNanoCores < 2e7 || *st.UsageNanoCores > 2.2e9 {
		t.Errorf("a spinning shell uses %v nanocores", st.UsageNanoCores)
	}
	if u2.workingSet < 10<<20 || u2.memoryUsage < u2.workingSet || u2.rss < 10<<20 || u2.pids < 1 {
		t.Errorf("usage %+v: want > 10 MiB working set and RSS, a process", u2)
	}
}
