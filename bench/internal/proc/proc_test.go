package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestCPUTimesOfThisProcess: the test's own /proc/PID/stat parses; after it has burnt CPU
// and waited for a child, its own time is user plus system and its children's is counted.
func TestCPUTimesOfThisProcess(t *testing.T) {
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	if err := exec.Command("sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done").Run(); err != nil {
		t.Fatal(err)
	}
	user, system, err := CPUTimes(os.Getpid())
	if err != nil || user+system == 0 {
		t.Fatalf("CPUTimes: %v %v, %v", user, system, err)
	}
	self, children, err := SelfAndChildren(os.Getpid())
	if err != nil || self < user+system || children == 0 {
		t.Errorf("SelfAndChildren: %v %v, %v (CPUTimes %v)", self, children, err, user+system)
	}
	if _, _, err := SelfAndChildren(1 << 30); err == nil {
		t.Error("SelfAndChildren of no process: no error")
	}
}

// TestRunTimeOfThisProcess: the test's own threads' run time grows while it spins; a
// process that does not exist has run for nothing.
func TestRunTimeOfThisProcess(t *testing.T) {
	start := RunTime(os.Getpid())
	if start == 0 {
		t.Fatal("RunTime of this process: 0")
	}
	for deadline := time.Now().Add(5 * time.Second); RunTime(os.Getpid())-start < 20*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("RunTime grew by %v in 5 s of spinning", RunTime(os.Getpid())-start)
		}
	}
	if got := RunTime(1 << 30); got != 0 {
		t.Errorf("RunTime of no process = %v", got)
	}
}

// TestSumSmaps: resident kB are summed per file and permissions, every mapping without a
// file path (heap, stack, anonymous) as one, largest first (then by name).
func TestSumSmaps(t *testing.T) {
	smaps := `00400000-01000000 r-xp 00000000 08:01 42    /usr/bin/x
Size:              12288 kB
Rss:                2048 kB
01000000-02000000 r--p 00c00000 08:01 42    /usr/bin/x
Rss:                1024 kB
02000000-02100000 rw-p 00000000 00:00 0
Rss:                4096 kB
7f0000000000-7f0000100000 r--s 00000000 08:01 43   /data/state.db
Rss:                 512 kB
7f0000100000-7f0000200000 r--s 00000000 08:01 43   /data/state.db
Rss:                 512 kB
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0    [stack]
Rss:                1024 kB
VmFlags: rd wr mr mw me gd ac
`
	got := sumSmaps(smaps)
	want := []Mapping{{"anonymous", 5}, {"r-xp /usr/bin/x", 2}, {"r--p /usr/bin/x", 1}, {"r--s /data/state.db", 1}}
	if len(got) != len(want) {
		t.Fatalf("sumSmaps = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sumSmaps[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
