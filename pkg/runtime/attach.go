package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// Labels of how a container's stdin and terminal are set up, read again when its task is
// started or a restarted minilet attaches to its pipes.
const (
	LabelStdin = labelPrefix + "stdin" // "", "true" or "once"
	LabelTTY   = labelPrefix + "tty"   // "true" or "false"
)

func stdinLabel(stdin, once bool) string {
	switch {
	case stdin && once:
		return "once"
	case stdin:
		return "true"
	}
	return ""
}

func stdioOf(labels map[string]string) stdio {
	return stdio{stdin: labels[LabelStdin] != "", stdinOnce: labels[LabelStdin] == "once", tty: labels[LabelTTY] == "true"}
}

// streams are a running container's ends minilet holds, as containerd's CRI plugin
// holds them: its output goes to the log and to every attached client, and its stdin
// (stdin: true) is a pipe minilet keeps open, fed by attached clients.
type streams struct {
	stdout, stderr *fanout
	stdin          *io.PipeWriter // nil without stdin
	stdinR         *io.PipeReader
	in             stdio
	exited         chan struct{} // closed when the container's output ends
	stdinClosed    sync.Once
}

func newStreams(stdout, stderr io.WriteCloser, in stdio) *streams {
	s := &streams{stdout: &fanout{base: stdout}, stderr: &fanout{base: stderr}, in: in, exited: make(chan struct{})}
	if in.stdin {
		s.stdinR, s.stdin = io.Pipe()
	}
	return s
}

func (s *streams) close() error {
	if s.stdin != nil {
		s.stdin.Close()
	}
	return errors.Join(s.stdout.base.Close(), s.stderr.base.Close())
}

// fanout writes to its base (the log) and to the writers attached; an attached writer
// that fails is dropped.
type fanout struct {
	base io.WriteCloser
	mu   sync.Mutex
	subs map[*io.Writer]bool
}

func (f *fanout) Write(p []byte) (int, error) {
	n, err := f.base.Write(p)
	f.mu.Lock()
	for w := range f.subs {
		if _, werr := (*w).Write(p); werr != nil {
			delete(f.subs, w)
		}
	}
	f.mu.Unlock()
	return n, err
}

// add attaches w until the returned function is called.
func (f *fanout) add(w io.Writer) func() {
	key := &w
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[*io.Writer]bool{}
	}
	f.subs[key] = true
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.subs, key)
		f.mu.Unlock()
	}
}

// AttachOptions are the client's ends of an attach; nil streams are not connected.
type AttachOptions struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TerminalSize
}

// Attach connects a client to the running container id's streams, as the kubelet's
// attach through CRI does: from now on its output (stdout only on a terminal) also goes
// to the client, and the client's input to the container's stdin when it was made with
// stdin: true (otherwise the input is ignored). It returns when the container's output
// ends (it exited), ctx ends, or the client's input ends: that detaches, except for a
// stdinOnce container without a terminal, whose stdin is then closed and which is
// followed to its end.
func (r *Runtime) Attach(ctx context.Context, id string, opts AttachOptions) error {
	r.logs.mu.Lock()
	c := r.logs.copied[id]
	r.logs.mu.Unlock()
	if c == nil || isClosed(c.streams.exited) { // its copier may not have let go of it yet
		return fmt.Errorf("attach to container %s: it is not running", id)
	}
	s := c.streams
	if opts.Stdout != nil {
		defer s.stdout.add(opts.Stdout)()
	}
	if opts.Stderr != nil && !s.in.tty {
		defer s.stderr.add(opts.Stderr)()
	}
	detach := make(chan struct{})
	if opts.Stdin != nil && s.stdin != nil {
		go func() {
			_, _ = io.Copy(s.stdin, opts.Stdin)
			if s.in.stdinOnce && !s.in.tty {
				r.closeStdin(ctx, id, s)
				return
			}
			close(detach)
		}()
	}
	if opts.Resize != nil && s.in.tty {
		if task, err := r.task(ctx, id); err == nil {
			go forwardResizes(ctx, task, opts.Resize)
		}
	}
	select {
	case <-s.exited:
	case <-detach:
	case <-ctx.Done():
	}
	return nil
}

// closeStdin ends the container's input for good: our pipe and the shim's end.
func (r *Runtime) closeStdin(ctx context.Context, id string, s *streams) {
	s.stdinClosed.Do(func() {
		s.stdin.Close()
		task, err := r.task(ctx, id)
		if err == nil {
			err = task.CloseIO(r.nsContext(context.WithoutCancel(ctx)), containerd.WithStdinCloser)
		}
		if err != nil && !errdefs.IsNotFound(err) {
			slog.Warn("close container stdin", "container", id, "err", err)
		}
	})
}

func (r *Runtime) task(ctx context.Context, id string) (containerd.Task, error) {
	ctx = r.nsContext(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.Task(ctx, nil)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
