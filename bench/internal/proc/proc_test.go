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
