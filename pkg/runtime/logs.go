package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	"github.com/minik8s/minik8s/pkg/crilog"
)

// LogConfig is where and how containers' output is logged.
type LogConfig struct {
	// FIFODir holds the named pipes between the containers' shims and this process, one
	// directory per container (as containerd's CRI plugin keeps them).
	FIFODir  string
	MaxSize  int64 // a log file is rotated before it grows past this (<= 0: never)
	MaxFiles int   // files kept per log, the current one included
}

// DefaultLogConfig are the kubelet's rotation defaults (10 MiB, 5 files).
func DefaultLogConfig(fifoDir string) LogConfig {
	return LogConfig{FIFODir: fifoDir, MaxSize: 10 << 20, MaxFiles: 5}
}

// containerLogs copies containers' output from their shims' pipes into CRI log files,
// at most once per container. The shim keeps its pipes open while nobody reads them, so
// a container only blocks (it is not killed) on output written while this process is
// down; a new process attaches again and copies what was held.
type containerLogs struct {
	cfg LogConfig

	mu      sync.Mutex
	copied  map[string]*copied // by container ID
	stopped bool
}

// copied is a container whose output this process copies, and the streams attach uses.
type copied struct {
	io      cio.IO
	streams *streams
}

func (l *containerLogs) fifoDir(id string) string { return filepath.Join(l.cfg.FIFODir, id) }

// creator is the IO of a new task of container id, logging to path, with a stdin pipe
// and a terminal as the container asks.
func (l *containerLogs) creator(path string, in stdio) cio.Creator {
	return func(id string) (cio.IO, error) { return l.attach(id, path, in)(nil) }
}

// stdio is how a container's process is connected besides its output: a stdin kept
// open for attaching (once: closed after the first attach's input ends), a terminal.
type stdio struct {
	stdin, stdinOnce, tty bool
}

// attach copies the output of container id into the log at path; it declines (with
// no IO) when the container is copied already or logs through other pipes.
func (l *containerLogs) attach(id, path string, in stdio) cio.Attach {
	return func(existing *cio.FIFOSet) (cio.IO, error) {
		dir := l.fifoDir(id)
		cfg := cio.Config{Stdout: filepath.Join(dir, "stdout"), Stderr: filepath.Join(dir, "stderr"), Terminal: in.tty}
		if in.stdin {
			cfg.Stdin = filepath.Join(dir, "stdin")
		}
		if in.tty {
			cfg.Stderr = "" // a terminal has one output
		}
		if existing != nil && (existing.Stdout != cfg.Stdout || existing.Stderr != cfg.Stderr || existing.Stdin != cfg.Stdin) {
			return nil, fmt.Errorf("container %s does not log through %s", id, dir)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.copied[id] != nil {
			return nil, fmt.Errorf("output of container %s is copied already", id)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("pipes of container %s: %w", id, err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("log directory of container %s: %w", id, err)
		}
		w, err := crilog.Open(path, l.cfg.MaxSize, l.cfg.MaxFiles)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", id, err)
		}
		st := newStreams(crilog.NewStream(w, crilog.Stdout), crilog.NewStream(w, crilog.Stderr), in)
		var stdinR io.Reader
		if st.stdin != nil {
			stdinR = st.stdinR
		}
		var stderr io.Writer = st.stderr
		if in.tty {
			stderr = nil
		}
		fifos := cio.NewFIFOSet(cfg, func() error { return os.RemoveAll(dir) })
		pipes, err := cio.NewAttach(cio.WithStreams(stdinR, st.stdout, stderr))(fifos)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("pipes of container %s: %w", id, err)
		}
		l.copied[id] = &copied{io: pipes, streams: st}
		go func() {
			pipes.Wait() // the container has exited (the shim closed the pipes), or stop
			close(st.exited)
			if err := errors.Join(st.close(), w.Close()); err != nil {
				slog.Warn("writing container log", "container", id, "log", path, "err", err)
			}
			l.mu.Lock()
			stopped := l.stopped
			delete(l.copied, id)
			l.mu.Unlock()
			if !stopped { // the pipes are kept for the next process to attach to
				pipes.Close()
			}
		}()
		return pipes, nil
	}
}

// AttachLogs copies again the output of every container that logs and is not copied
// by this process: what a restarted minilet does for the containers it finds.
func (r *Runtime) AttachLogs(ctx context.Context) error {
	ctx = r.nsContext(ctx)
	list, err := r.client.Containers(ctx)
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	for _, c := range list {
		labels, err := c.Labels(ctx)
		if err != nil || labels[LabelLogPath] == "" {
			continue
		}
		r.logs.mu.Lock()
		known := r.logs.copied[c.ID()] != nil
		r.logs.mu.Unlock()
		if known {
			continue
		}
		// Only running containers: an exited one's pipes are closed, its output copied
		// (or, written in its last moments while nobody read, lost).
		if st, err := r.ContainerStatus(ctx, c.ID()); err != nil || st.State != StateRunning {
			continue
		}
		_, err = c.Task(ctx, r.logs.attach(c.ID(), labels[LabelLogPath], stdioOf(labels)))
		if err != nil && !errdefs.IsNotFound(err) {
			slog.Warn("attaching to a container's output", "container", c.ID(), "err", err)
		}
	}
	return nil
}

// stop stops copying, as the end of this process would: the shims hold the output
// until another process attaches.
func (l *containerLogs) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	for _, c := range l.copied {
		c.io.Cancel()
	}
	// The namespace's pipe directory goes with its last container's pipes (a test's
	// namespace, say); os.Remove leaves it while a container still has its pipes there.
	_ = os.Remove(l.cfg.FIFODir)
}

// removeLogPipes removes a container's pipes (left by a reboot, or never opened).
func (l *containerLogs) removeLogPipes(id string) error {
	return os.RemoveAll(l.fifoDir(id))
}
