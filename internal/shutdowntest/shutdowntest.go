// Package shutdowntest checks that a daemon stops everything it started when it gets
// SIGTERM, as systemd stops it: the test binary re-executes itself as the daemon (its
// TestMain calls HelperMain), runs until SIGTERM, then counts the goroutines left (goleak).
package shutdowntest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"

	"github.com/minik8s/minik8s/internal/syncbuf"
	"github.com/minik8s/minik8s/internal/testenv"
)

// argsEnv, set, makes the test binary the daemon with these arguments (unit separated).
const argsEnv = "MINIK8S_SHUTDOWN_HELPER_ARGS"

// cleanMark is what the helper prints when no goroutine it started is left.
const cleanMark = "no goroutine left"

// HelperMain, called first in TestMain, makes this process the daemon when a test started
// it as one: the daemon's command (cmd/<daemon>'s newCommand) runs with the arguments until
// it returns; the process then exits 0, 1 when it failed, or 2 when goroutines it started
// are left.
func HelperMain(newCommand func() *cobra.Command) {
	args := os.Getenv(argsEnv)
	if args == "" {
		return
	}
	before := goleak.IgnoreCurrent()
	cmd := newCommand()
	cmd.SetArgs(strings.Split(args, "\x1f"))
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		os.Exit(1)
	}
	err := goleak.Find(before,
		// Process-wide, not the daemon's: the signal watcher os/signal starts once, and the
		// idle keep-alive connections of client-go's shared transports.
		goleak.IgnoreAnyFunction("os/signal.loop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
	if err != nil {
		fmt.Println("goroutines left after the daemon stopped:", err)
		os.Exit(2)
	}
	fmt.Println(cleanMark+"; goroutines now:", runtime.NumGoroutine())
	os.Exit(0)
}

// Daemon is the test binary running as a daemon.
type Daemon struct {
	cmd  *exec.Cmd
	out  syncbuf.Buffer // read while the daemon may still be writing
	done chan struct{}  // closed when the process has exited, with err
	err  error
}

// Start runs the test binary as the daemon with args, behind prefix (say nsenter's
// arguments, which exec the binary in place of themselves), and waits until it says
// READY=1 on its notify socket, as systemd waits for a Type=notify service.
func Start(t *testing.T, prefix, args []string) *Daemon {
	t.Helper()
	testenv.Integration(t, "runs a whole daemon")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	notifyPath := filepath.Join(t.TempDir(), "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()

	argv := append(append([]string{}, prefix...), self)
	d := &Daemon{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	d.cmd.Env = append(os.Environ(), argsEnv+"="+strings.Join(args, "\x1f"), "NOTIFY_SOCKET="+notifyPath)
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	})

	_ = notify.SetReadDeadline(time.Now().Add(2 * time.Minute))
	ready := make(chan string, 1)
	go func() {
		buf := make([]byte, 256)
		n, err := notify.Read(buf)
		ready <- fmt.Sprintf("%s%v", buf[:n], err)
	}()
	select {
	case msg := <-ready:
		if !strings.Contains(msg, "READY=1") {
			t.Fatalf("the daemon never said READY=1 (%s):\n%s", msg, d.out.String())
		}
	case <-d.done:
		t.Fatalf("the daemon stopped before it was ready (%v):\n%s", d.err, d.out.String())
	}
	return d
}

// StopAndCheck sends SIGTERM and fails t unless the daemon returns within a minute with
// no goroutine it started left running.
func (d *Daemon) StopAndCheck(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
		if d.err != nil {
			t.Fatalf("the daemon after SIGTERM: %v\n%s", d.err, d.out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the daemon did not stop within a minute of SIGTERM:\n%s", d.out.String())
	}
	out := strings.TrimSpace(d.out.String())
	if !strings.Contains(out, cleanMark) {
		t.Fatalf("the daemon did not check its goroutines:\n%s", out)
	}
	t.Log(out[strings.LastIndex(out, "\n")+1:])
}
