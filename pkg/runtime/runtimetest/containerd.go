// Package runtimetest gives tests of any package a private, real containerd and the
// project's images. It is imported only by tests.
package runtimetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"

	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

const (
	startTimeout = 30 * time.Second
	purgeTimeout = time.Minute
	stopTimeout  = 10 * time.Second
)

// RequireRoot skips the test unless it runs as root with every named binary on PATH.
func RequireRoot(t testing.TB, binaries ...string) {
	t.Helper()
	testenv.RequireRoot(t, "containers, network namespaces, mounts")
	testenv.RequireTools(t, binaries...)
}

// StartContainerd starts a containerd of the test's own (root, state and socket in
// fresh directories, CRI plugin disabled), waits until it answers and returns its socket
// address. Cleanup removes every container and task it ran, stops it and unmounts and
// deletes its directories. It skips the test when not root or when containerd or runc
// is missing.
func StartContainerd(t testing.TB) string {
	t.Helper()
	RequireRoot(t, "containerd", "runc", "containerd-shim-runc-v2")

	root := t.TempDir()
	// Unix socket paths must stay under 108 bytes, so the socket and state live in a
	// short directory of their own.
	runDir, err := os.MkdirTemp("/run", "mk-ctd-")
	if err != nil {
		t.Fatalf("creating containerd run directory: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(runDir); err != nil {
			t.Errorf("removing %s: %v", runDir, err)
		}
	})
	address := filepath.Join(runDir, "containerd.sock")
	config := filepath.Join(root, "config.toml")
	if err := os.WriteFile(config, runtime.DaemonConfig(root, filepath.Join(runDir, "state"), address), 0o644); err != nil {
		t.Fatalf("writing containerd config: %v", err)
	}
	logPath := filepath.Join(root, "containerd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("creating containerd log: %v", err)
	}
	defer logFile.Close()

	cmd := exec.Command("containerd", "--config", config)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Pdeathsig: a test binary that dies must not leave containerd behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error)
	exited := make(chan struct{})
	go func() {
		// Pdeathsig fires when the starting thread ends, so that thread is kept for this
		// goroutine until containerd has exited.
		goruntime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			_ = cmd.Wait()
		}
		close(exited)
	}()
	if err := <-started; err != nil {
		t.Fatalf("starting containerd: %v", err)
	}
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			ctx, cancel := context.WithTimeout(context.Background(), purgeTimeout)
			if err := runtime.Purge(ctx, address); err != nil {
				t.Errorf("removing the test's containers: %v", err)
			}
			cancel()
			stop(cmd, exited)
		}
		if err := unmountUnder(root, runDir); err != nil {
			t.Errorf("unmounting containerd directories: %v", err)
		}
		if t.Failed() {
			// Short, so that a test run's tail still shows the failure above it.
			t.Logf("containerd log (%s):\n%s", address, tail(logPath, 25))
		}
	})

	if err := waitReady(address, exited); err != nil {
		t.Fatalf("containerd at %s: %v\n%s", address, err, tail(logPath, 60))
	}
	return address
}

func waitReady(address string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("exited during start-up")
		default:
		}
		if err := ping(address); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", startTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ping(address string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rt, err := runtime.New(ctx, address, "default")
	if err != nil {
		return err
	}
	return rt.Close()
}

func stop(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// unmountUnder detaches every mount below the given directories, deepest first.
func unmountUnder(dirs ...string) error {
	var targets []string
	for _, dir := range dirs {
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		if err != nil {
			return err
		}
		for _, m := range mounts {
			targets = append(targets, m.Mountpoint)
		}
	}
	slices.SortFunc(targets, func(a, b string) int { return len(b) - len(a) })
	for _, target := range targets {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			return fmt.Errorf("unmounting %s: %w", target, err)
		}
	}
	return nil
}

// tail returns the last n lines of a file, for failure reports.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
