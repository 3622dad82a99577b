package runtime_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/images"
	"github.com/minik8s/minik8s/internal/syncbuf"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestAttach attaches to a real container made with stdin: true and stdinOnce: the
// client's input reaches its stdin, its output reaches the client as well as the log,
// and the end of the input closes its stdin, so it exits and the attach returns.
func TestAttach(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.importImage(t, images.BusyboxRef)
	sandbox, podUID := e.runSandbox(ctx, t, "attach")
	logPath := filepath.Join(e.logsDir, podUID, "0.log")
	c, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{Name: "upper", Image: images.BusyboxRef,
		Command: []string{"sh", "-c", "echo ready; tr a-z A-Z; echo done >&2"}, SandboxID: sandbox.ID, LogPath: logPath,
		Stdin: true, StdinOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.rt.RemoveContainer(context.Background(), c.ID)
		_ = e.rt.RemoveContainer(context.Background(), sandbox.ID)
	})
	if err := e.rt.StartContainer(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	// The container waits on its stdin: nobody has written to it yet.
	time.Sleep(500 * time.Millisecond)
	if st, err := e.rt.ContainerStatus(ctx, c.ID); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("container with an open stdin: %+v, %v; want it running", st, err)
	}

	inR, inW := io.Pipe()
	var out, errOut syncbuf.Buffer // the copier writes, the test reads
	done := make(chan error, 1)
	go func() {
		done <- e.rt.Attach(ctx, c.ID, runtime.AttachOptions{Stdin: inR, Stdout: &out, Stderr: &errOut})
	}()
	_, _ = io.WriteString(inW, "hello\n")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "HELLO") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	inW.Close() // stdinOnce: the container sees the end of its input and exits
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("attach did not return after the input ended and the container exited")
	}
	if out.String() != "HELLO\n" || errOut.String() != "done\n" {
		t.Errorf("attached output %q, errors %q; want HELLO (ready came before the attach) and done", out.String(), errOut.String())
	}
	log, _ := os.ReadFile(logPath)
	for _, want := range []string{"stdout F ready", "stdout F HELLO", "stderr F done"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if err := e.rt.Attach(ctx, c.ID, runtime.AttachOptions{Stdout: &out}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("attach to an exited container: %v", err)
	}
}
