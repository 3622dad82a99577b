package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"syscall"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
)

// TerminalSize is a terminal's width and height in characters.
type TerminalSize struct {
	Width, Height uint16
}

// ExecOptions describe a process to run in a running container and where its streams go.
// Nil streams are not connected. With TTY the process gets a terminal, whose output (stdout
// and stderr together) goes to Stdout.
type ExecOptions struct {
	Cmd    []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool
	// Resize delivers terminal sizes while the process runs (TTY only); may be nil.
	Resize <-chan TerminalSize
}

// Exec runs a process in the running container id, with the container's environment,
// user and working directory, and returns its exit code once it has exited and all of
// its output has been copied. Ending ctx kills the process. A non-nil error means the
// process could not be run or waited for; a non-zero exit is not an error.
func (r *Runtime) Exec(ctx context.Context, id string, opts ExecOptions) (int, error) {
	if len(opts.Cmd) == 0 {
		return 0, errors.New("exec: no command given")
	}
	ctx = r.nsContext(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: it has no running task: %w", id, err)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: reading its spec: %w", id, err)
	}
	pspec := *spec.Process
	pspec.Args = opts.Cmd
	pspec.Terminal = opts.TTY

	// The shim keeps its end of the stdin FIFO open, so the process sees the end of its
	// input only when we ask the shim to close it.
	stdin := opts.Stdin
	var closeStdin *stdinCloser
	if stdin != nil {
		closeStdin = &stdinCloser{ready: make(chan struct{})}
		stdin = closeStdin.wrap(stdin)
	}
	streams := []cio.Opt{cio.WithStreams(stdin, opts.Stdout, opts.Stderr)}
	if opts.TTY {
		streams = append(streams, cio.WithTerminal)
	}
	execID := "exec-" + newContainerID("", "")
	process, err := task.Exec(ctx, execID, &pspec, cio.NewCreator(streams...))
	if closeStdin != nil {
		closeStdin.set(ctx, process) // nil when Exec failed
	}
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	defer func() {
		// Its own context: the caller's may be over, and the exec must not outlive us.
		delCtx, cancel := context.WithTimeout(r.nsContext(context.Background()), killTimeout)
		defer cancel()
		if _, err := process.Delete(delCtx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			slog.Error("delete exec process", "container", id, "exec", execID, "err", err)
		}
	}()
	exited, err := process.Wait(ctx)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: waiting: %w", id, err)
	}
	if err := process.Start(ctx); err != nil {
		return 0, fmt.Errorf("failed to exec in container: failed to start exec %q: %w", execID, err) // containerd CRI's words
	}
	if opts.TTY && opts.Resize != nil {
		go forwardResizes(ctx, process, opts.Resize)
	}

	select {
	case status := <-exited:
		code, _, err := status.Result()
		if err != nil {
			return 0, fmt.Errorf("exec in container %s: %w", id, err)
		}
		process.IO().Wait() // the last output is copied before the caller closes its streams
		return int(code), nil
	case <-ctx.Done():
		_ = process.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return 0, fmt.Errorf("exec in container %s: %w", id, ctx.Err())
	}
}

// forwardResizes passes terminal sizes to process until ctx ends or sizes closes.
func forwardResizes(ctx context.Context, process containerd.Process, sizes <-chan TerminalSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case size, ok := <-sizes:
			if !ok {
				return
			}
			if err := process.Resize(ctx, uint32(size.Width), uint32(size.Height)); err != nil && !errdefs.IsNotFound(err) {
				slog.Error("resize terminal", "err", err)
			}
		}
	}
}

// stdinCloser closes a process's stdin in the shim when the reader it wraps ends.
type stdinCloser struct {
	once    sync.Once
	ready   chan struct{}
	ctx     context.Context
	process containerd.Process
}

func (s *stdinCloser) set(ctx context.Context, p containerd.Process) {
	s.ctx, s.process = ctx, p
	close(s.ready)
}

func (s *stdinCloser) wrap(r io.Reader) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		n, err := r.Read(p)
		if err != nil {
			s.once.Do(func() {
				go func() { // cio's copy closes its FIFO end after we return
					<-s.ready
					if s.process == nil {
						return
					}
					if err := s.process.CloseIO(s.ctx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
						slog.Error("close exec stdin", "err", err)
					}
				}()
			})
		}
		return n, err
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
