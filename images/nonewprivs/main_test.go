package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
)

// TestSetuidRootUnlessNoNewPrivs: installed setuid root as in the image and run as uid
// 1000, it prints upstream's "Effective uid: 0"; under no_new_privs (what
// allowPrivilegeEscalation: false sets) the kernel ignores the setuid bit and it prints
// "Effective uid: 1000".
func TestSetuidRootUnlessNoNewPrivs(t *testing.T) {
	testenv.RequireRoot(t, "installs a setuid-root binary and runs it as uid 1000")
	testenv.RequireTools(t, "setpriv")
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} { // t.TempDir's are 0700: let uid 1000 in
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "nnp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Chown(bin, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	asUser := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q as uid 1000: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	if got := asUser(bin); got != "Effective uid: 0\n" {
		t.Errorf("setuid root, run as uid 1000: %q, want \"Effective uid: 0\\n\"", got)
	}
	if got := asUser("setpriv", "--no-new-privs", bin); got != "Effective uid: 1000\n" {
		t.Errorf("the same under no_new_privs: %q, want \"Effective uid: 1000\\n\"", got)
	}
}
