package crilog

import (
	"bytes"
	"sync"
	"time"
)

// Stream turns what a container writes to one of its streams into entries of w: one
// per line, lines longer than MaxEntry split into partial entries. Write never fails
// (a full disk must not block the container), the last error is kept for Err.
type Stream struct {
	w    *Writer
	name string
	now  func() time.Time

	mu      sync.Mutex
	pending []byte // the start of a line not ended yet
	err     error
}

// NewStream is the stream called name (Stdout or Stderr) of w.
func NewStream(w *Writer, name string) *Stream {
	return &Stream{w: w, name: name, now: time.Now}
}

func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.pending = append(s.pending, p...)
			for len(s.pending) >= MaxEntry {
				s.emit(s.pending[:MaxEntry], true)
				s.pending = append(s.pending[:0], s.pending[MaxEntry:]...)
			}
			break
		}
		line := p[:i]
		if len(s.pending) > 0 {
			line = append(s.pending, line...)
		}
		for len(line) > MaxEntry {
			s.emit(line[:MaxEntry], true)
			line = line[MaxEntry:]
		}
		s.emit(line, false)
		s.pending = s.pending[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Close writes what is left of an unfinished line as a partial entry, as containerd's
// CRI logger does at the end of a stream: readers then show it without a newline the
// container never wrote (`echo -n DONE` is a termination message of "DONE").
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		s.emit(s.pending, true)
		s.pending = nil
	}
	return s.err
}

func (s *Stream) emit(content []byte, partial bool) {
	if err := s.w.Write(Entry{Time: s.now(), Stream: s.name, Partial: partial, Content: content}); err != nil {
		s.err = err
	}
}
