// Package crilog reads and writes container logs in the CRI log format, the one the
// kubelet and crictl read: one entry per line,
//
//	2016-10-06T00:17:09.669794202Z stdout F a line of output
//
// (time, stream, F for a full line or P for part of a longer one, the content without
// its newline), in a file rotated at a size limit.
package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Stream names.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// Tags of an entry: a whole line, or a part of a line longer than MaxEntry.
const (
	tagFull    = "F"
	tagPartial = "P"
)

// MaxEntry is the most content one entry holds; longer lines are split into partial
// entries, as containerd's CRI plugin splits them.
const MaxEntry = 16 << 10

// timeFormat is RFC 3339 with nanoseconds, always nine digits so entries sort as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// Entry is one line of a log file.
type Entry struct {
	Time    time.Time
	Stream  string
	Partial bool   // the line goes on in the next entry of the same stream
	Content []byte // without the newline
}

// Bytes is the entry as a line of the file, newline included.
func (e Entry) Bytes() []byte {
	tag := tagFull
	if e.Partial {
		tag = tagPartial
	}
	b := make([]byte, 0, len(timeFormat)+len(e.Stream)+len(e.Content)+4)
	b = e.Time.UTC().AppendFormat(b, timeFormat)
	b = append(b, ' ')
	b = append(b, e.Stream...)
	b = append(b, ' ')
	b = append(b, tag...)
	b = append(b, ' ')
	b = append(b, e.Content...)
	return append(b, '\n')
}

// Output is what the container wrote: the content, with its newline unless partial.
func (e Entry) Output() []byte {
	if e.Partial {
		return e.Content
	}
	return append(e.Content[:len(e.Content):len(e.Content)], '\n')
}

var errFormat = errors.New("not a CRI log line")

// Parse reads one line of a log file (its newline is optional).
func Parse(line []byte) (Entry, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	fields := bytes.SplitN(line, []byte(" "), 4)
	if len(fields) < 3 {
		return Entry{}, fmt.Errorf("%w: %q", errFormat, truncate(line))
	}
	t, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return Entry{}, fmt.Errorf("%w: bad time %q", errFormat, truncate(fields[0]))
	}
	e := Entry{Time: t, Stream: string(fields[1])}
	if e.Stream != Stdout && e.Stream != Stderr {
		return Entry{}, fmt.Errorf("%w: bad stream %q", errFormat, truncate(fields[1]))
	}
	switch string(fields[2]) {
	case tagFull:
	case tagPartial:
		e.Partial = true
	default:
		return Entry{}, fmt.Errorf("%w: bad tag %q", errFormat, truncate(fields[2]))
	}
	if len(fields) == 4 {
		e.Content = fields[3]
	}
	return e, nil
}

func truncate(b []byte) []byte { return b[:min(len(b), 64)] }
