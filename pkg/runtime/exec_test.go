package runtime_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/images"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestExec runs processes in a real container: stdin reaches them and its end is seen,
// stdout and stderr are kept apart, the exit code comes back, and a TTY merges the streams.
func TestExec(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.importImage(t, images.BusyboxRef)
	sandbox, podUID := e.runSandbox(ctx, t, "exec")
	c, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{Name: "sleeper", Image: images.BusyboxRef,
		Command: []string{"sleep", "3600"}, SandboxID: sandbox.ID, LogPath: filepath.Join(e.logsDir, podUID, "sleeper.log")})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rt.StartContainer(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.rt.RemoveContainer(context.Background(), c.ID)
		_ = e.rt.RemoveContainer(context.Background(), sandbox.ID)
	})

	var out, errOut bytes.Buffer
	code, err := e.rt.Exec(ctx, c.ID, runtime.ExecOptions{
		Cmd:   []string{"sh", "-c", "tr a-z A-Z; echo oops >&2; exit 3"},
		Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 || out.String() != "HELLO\n" || errOut.String() != "oops\n" {
		t.Fatalf("exec: code %d, stdout %q, stderr %q; want 3, HELLO, oops", code, out.String(), errOut.String())
	}

	out.Reset()
	code, err = e.rt.Exec(ctx, c.ID, runtime.ExecOptions{Cmd: []string{"sh", "-c", "tty; echo err >&2"}, Stdout: &out, TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(out.String(), "/dev/pts/") || !strings.Contains(out.String(), "err") {
		t.Fatalf("exec with a TTY: code %d, output %q; want a /dev/pts terminal and stderr in it", code, out.String())
	}

	// Worded as containerd's CRI, which kubectl exec shows.
	if _, err := e.rt.Exec(ctx, c.ID, runtime.ExecOptions{Cmd: []string{"/no/such/binary"}, Stdout: &out}); err == nil || !strings.HasPrefix(err.Error(), "failed to exec in container: failed to start exec ") {
		t.Fatalf("exec of a missing binary: %v", err)
	}
}
