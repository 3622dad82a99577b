package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMissingFailsUnderMakeTest runs a test that lacks a tool twice in a child process:
// it must skip in a plain run and fail under make test.
func TestMissingFailsUnderMakeTest(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		RequireTools(t, "no-such-tool-minik8s")
		return
	}
	for _, tc := range []struct {
		makeTest string
		wantFail bool
		wantText string
	}{
		{"", false, "--- SKIP"},
		{"1", true, "--- FAIL"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingFailsUnderMakeTest$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "MINIK8S_MAKE_TEST="+tc.makeTest)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.wantFail || !strings.Contains(string(out), tc.wantText) || !strings.Contains(string(out), "no-such-tool-minik8s") {
			t.Errorf("MINIK8S_MAKE_TEST=%q: err=%v, want fail=%v and %q naming the tool:\n%s", tc.makeTest, err, tc.wantFail, tc.wantText, out)
		}
	}
}

// TestIntegrationSkipsOnlyUnderShort runs an integration test in a child process: -short
// (make unit) skips it, a run without (make test) runs it.
func TestIntegrationSkipsOnlyUnderShort(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Integration(t, "starts a pretend control plane")
		t.Log("integration body ran")
		return
	}
	for _, tc := range []struct {
		short    string
		wantText string
	}{
		{"true", "--- SKIP"},
		{"false", "integration body ran"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIntegrationSkipsOnlyUnderShort$", "-test.v", "-test.short="+tc.short)
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.wantText) {
			t.Errorf("-test.short=%s: err=%v, want %q:\n%s", tc.short, err, tc.wantText, out)
		}
	}
}

// ModuleDir finds the files of a module go.mod requires, as published.
func TestModuleDir(t *testing.T) {
	dir := ModuleDir(t, "sigs.k8s.io/gateway-api")
	if _, err := os.Stat(dir + "/config/crd/standard/gateway.networking.k8s.io_httproutes.yaml"); err != nil {
		t.Errorf("ModuleDir: %v", err)
	}
}

func TestTimeoutScales(t *testing.T) {
	for _, tc := range []struct {
		scale string
		want  time.Duration
	}{
		{"", 20 * time.Second},
		{"3", time.Minute},
		{"0.5", 10 * time.Second},
		{"0", 20 * time.Second},
		{"lots", 20 * time.Second},
	} {
		t.Setenv(TimeoutScaleEnv, tc.scale)
		if got := Timeout(20 * time.Second); got != tc.want {
			t.Errorf("%s=%q: Timeout(20s) = %v, want %v", TimeoutScaleEnv, tc.scale, got, tc.want)
		}
	}
}
