// Package testenv decides what a test does when something it needs is missing. Under
// `make test` (which sets MINIK8S_MAKE_TEST=1 after installing everything the tests need)
// a missing piece is a failure: a skip there would hide a capability nobody tested. Run
// any other way (a plain `go test ./...`, non-root) the test skips and says why.
//
// `make unit` runs with -short: there every integration test (the ones that call RequireRoot
// or Integration: they need root, containerd or a VM, or start whole daemons such as a
// control plane or etcd) skips, whatever the host offers, so the fast loop stays fast and
// runs the same set on a laptop and here.
package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// UnderMakeTest reports whether the tests run under `make test`.
func UnderMakeTest() bool { return os.Getenv("MINIK8S_MAKE_TEST") == "1" }

// TimeoutScaleEnv names the factor Timeout stretches a test's limits by: a machine shared
// with other work (load far above its cores) sets it above 1 rather than the tests waiting
// longer everywhere.
const TimeoutScaleEnv = "MINIK8S_TEST_TIMEOUT_SCALE"

// Timeout is d stretched by $MINIK8S_TEST_TIMEOUT_SCALE (a positive number, 1 when unset).
func Timeout(d time.Duration) time.Duration {
	scale, err := strconv.ParseFloat(os.Getenv(TimeoutScaleEnv), 64)
	if err != nil || scale <= 0 {
		return d
	}
	return time.Duration(float64(d) * scale)
}

// Missing stops t for want of something: a failure under `make test`, a skip elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if UnderMakeTest() {
		t.Fatalf("%s (make test provides it: this is a failure there)", msg)
	}
	t.Skip(msg)
}

// Integration skips t under -short (`make unit`): it needs root, containerd or a VM, or
// starts whole daemons (a control plane, etcd, a lab), for why. Test helpers that start
// such daemons call it, so every test using them is an integration test. `make test` runs
// without -short, so this never skips there.
func Integration(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short (make unit) leaves out integration tests: %s", why)
	}
}

// RequireRoot stops t unless it runs as root, for why (what the test does as root). Under
// -short it skips: a test that needs root is not a unit test.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	Integration(t, "needs root: "+why)
	if os.Geteuid() != 0 {
		Missing(t, "needs root: %s", why)
	}
}

// RequireTools stops t unless every named program is on PATH.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			Missing(t, "%s is not on PATH (make deps installs it): %v", tool, err)
		}
	}
}

// RequireFile stops t unless path exists; what says what it is and how to get it.
func RequireFile(t testing.TB, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, "%s missing (%s): %v", path, what, err)
	}
}

// CgroupRoot names a cgroup root of t's own: t.TempDir's parent is unique to the test
// process, so two packages (or two runs) testing pods at once never share a cgroup (the
// base alone, "001", is the same in every process).
func CgroupRoot(t testing.TB) string {
	dir := t.TempDir()
	return "/minik8s-test-" + filepath.Base(filepath.Dir(dir)) + "-" + filepath.Base(dir)
}

// ModuleDir is where the Go toolchain keeps module, a requirement of go.mod (downloaded
// first if the module cache lacks it): tests use the published modules' own files (CRDs,
// example programs) unmodified from there.
func ModuleDir(t testing.TB, module string) string {
	t.Helper()
	RequireTools(t, "go")
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	var m struct{ Dir string }
	if err != nil || json.Unmarshal(out, &m) != nil || m.Dir == "" {
		t.Fatalf("go mod download -json %s: %v %s", module, err, out)
	}
	return m.Dir
}
