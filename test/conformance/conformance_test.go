package conformance

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
)

// subsetFile lists the conformance tests make test runs, each with why it was chosen.
const subsetFile = "ci-subset.txt"

// ciProcs is how many e2e.test processes run the subset: its tests mostly wait for pods and
// controllers, so two halve its wall time on two cores.
const ciProcs = 2

// TestCISubset runs the conformance tests of ci-subset.txt through hack/conformance.sh (one
// way to run conformance) on a 2-node lab of its own, and fails naming each that did not
// pass. e2e.test comes from hack/kube-build.sh's cache, built there first if absent
// (docs/conformance.md says what that costs). The run's log and report are kept when it fails.
func TestCISubset(t *testing.T) {
	built := testenv.RequireBuilt(t)
	testenv.RequireTools(t, "ip", "go")
	if tars, _ := filepath.Glob(filepath.Join(built.ImagesDir, "e2e", "*.tar")); len(tars) == 0 {
		t.Fatalf("no e2e test images in %s/e2e: run `make images` (or `make test`, which does)", built.ImagesDir)
	}
	names, err := ReadNames(subsetFile)
	if err != nil {
		t.Fatal(err)
	}
	focusFile, _ := filepath.Abs(subsetFile)
	out, err := os.MkdirTemp("", "minik8s-conformance-ci-")
	if err != nil {
		t.Fatal(err)
	}
	lab := testenv.UniqueName("conf-ci")
	minilab := filepath.Join(built.BinDir, "minilab")
	t.Cleanup(func() {
		// The script takes its lab down on exit; this is for a script killed before that.
		_ = exec.Command(minilab, "down", "--name", lab).Run()
		if t.Failed() {
			t.Logf("the run's e2e.log, junit_01.xml, summary.txt and the lab's daemon logs (lab-logs/) are kept in %s", out)
		} else {
			os.RemoveAll(out)
		}
	})

	timeout := testenv.Timeout(25 * time.Minute)
	if deadline, ok := t.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline)-2*time.Minute)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "hack/conformance.sh")
	cmd.Dir = "../.."
	cmd.Env = append(withoutVars(os.Environ(), "FOCUS", "SKIP", "CONFORMANCE_KUBECONFIG"),
		"FOCUS_FILE="+focusFile, "CONFORMANCE_OUT="+out, "CONFORMANCE_LAB="+lab,
		"CONFORMANCE_PROCS="+strconv.Itoa(ciProcs), "CONFORMANCE_TIMEOUT="+(timeout-time.Minute).String(),
		"MINIK8S_BIN="+built.BinDir, "MINIK8S_IMAGES="+built.ImagesDir)
	// SIGTERM to the script and e2e.test alike: the script's exit trap takes the lab down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	leftovers := filepath.Join(os.TempDir(), "test-kuberc*")
	before, _ := filepath.Glob(leftovers)
	start := time.Now()
	runErr := cmd.Run()
	after, _ := filepath.Glob(leftovers)
	if left := slices.DeleteFunc(after, func(p string) bool { return slices.Contains(before, p) }); len(left) > 0 {
		t.Errorf("the run left e2e.test's temporary directories in %s: %v", os.TempDir(), left)
	}
	t.Logf("hack/conformance.sh (%s, %d tests, %d processes):\n%s", time.Since(start).Round(time.Second), len(names), ciProcs, output.String())

	results, err := Read(filepath.Join(out, "junit_01.xml"))
	if err != nil {
		t.Fatalf("no report of the run (the script: %v): %v", runErr, err)
	}
	if missed := Missed(names, results); len(missed) > 0 {
		t.Fatalf("%d of the %d conformance tests of %s did not pass:\n%s", len(missed), len(names), subsetFile, strings.Join(missed, "\n"))
	}
	if runErr != nil {
		t.Fatalf("every listed test passed, yet hack/conformance.sh failed: %v", runErr)
	}
}

// withoutVars is env without the named variables: the caller's FOCUS must not narrow the subset.
func withoutVars(env []string, names ...string) []string {
	var kept []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			kept = append(kept, kv)
		}
	}
	return kept
}
