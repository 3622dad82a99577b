package crilog

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"time"
)

// ReadOptions choose what Reader prints (the kubelet's PodLogOptions).
type ReadOptions struct {
	Since      time.Time // entries before are skipped; zero: none
	Tail       int64     // start this many entries before the end; < 0: at the start
	Timestamps bool      // print the time (RFC 3339) of the entry starting each line before it
}

// Reader prints the output in a log file, following the file across rotations.
type Reader struct {
	path    string
	opts    ReadOptions
	f       *os.File
	r       *bufio.Reader
	pending []byte // a line read before its writer finished it
	midLine bool   // the last entry read was part of a line going on in the next
}

// OpenReader opens the log at path, positioned as opts say.
func OpenReader(path string, opts ReadOptions) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if opts.Tail >= 0 {
		if err := seekTail(f, opts.Tail); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &Reader{path: path, opts: opts, f: f, r: bufio.NewReaderSize(f, 64<<10)}, nil
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// CopyTo prints every whole line written so far; at the end of a file that has been
// rotated meanwhile it goes on with the new file. It reports how many bytes it printed;
// an error is out's (or the file's).
func (r *Reader) CopyTo(out io.Writer) (int64, error) {
	var n int64
	for {
		line, err := r.r.ReadSlice('\n')
		switch {
		case err == nil:
			if len(r.pending) > 0 {
				line = append(r.pending, line...)
				r.pending = r.pending[:0]
			}
			m, werr := r.print(out, line)
			n += int64(m)
			if werr != nil {
				return n, werr
			}
		case errors.Is(err, bufio.ErrBufferFull):
			r.pending = append(r.pending, line...)
		case errors.Is(err, io.EOF):
			r.pending = append(r.pending, line...)
			if switched, err := r.followRotation(); err != nil || !switched {
				return n, err
			}
		default:
			return n, err
		}
	}
}

// followRotation switches to the file now at path when it is not the one open.
func (r *Reader) followRotation() (bool, error) {
	now, err := os.Stat(r.path)
	if err != nil {
		return false, nil // between the rename and the new file
	}
	open, err := r.f.Stat()
	if err != nil {
		return false, err
	}
	if os.SameFile(now, open) {
		return false, nil
	}
	f, err := os.Open(r.path)
	if err != nil {
		return false, nil
	}
	r.f.Close()
	r.f, r.pending = f, r.pending[:0]
	r.r.Reset(f)
	return true, nil
}

func (r *Reader) print(out io.Writer, line []byte) (int, error) {
	e, err := Parse(line)
	if err != nil {
		return out.Write(line) // not ours (written before minilet wrote CRI logs): as it is
	}
	// Only where a line starts gets a time, as the kubelet's ReadLogs: an entry skipped by
	// Since still says where the next line starts.
	lineStart := !r.midLine
	r.midLine = e.Partial && len(e.Content) > 0
	if !r.opts.Since.IsZero() && e.Time.Before(r.opts.Since) {
		return 0, nil
	}
	if r.opts.Timestamps && lineStart {
		var b bytes.Buffer
		b.WriteString(e.Time.Format(time.RFC3339Nano))
		b.WriteByte(' ')
		b.Write(e.Output())
		return out.Write(b.Bytes())
	}
	return out.Write(e.Output())
}

// seekTail positions f at the start of its last n lines (a last line without a newline
// counts), reading backwards in blocks so a long log is not read whole.
func seekTail(f *os.File, n int64) error {
	const block = 32 << 10
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil || n == 0 {
		return err
	}
	buf := make([]byte, block)
	var newlines int64
	for pos := end; pos > 0; {
		size := min(int64(block), pos)
		pos -= size
		if _, err := f.ReadAt(buf[:size], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		for i := size - 1; i >= 0; i-- {
			// The newline ending the file ends the last line; it does not start one.
			if buf[i] != '\n' || pos+i == end-1 {
				continue
			}
			if newlines++; newlines == n {
				_, err := f.Seek(pos+i+1, io.SeekStart)
				return err
			}
		}
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}
