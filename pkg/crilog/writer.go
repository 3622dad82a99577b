package crilog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Writer appends entries to a log file, rotating it when it would grow past maxSize:
// the file is renamed PATH.YYYYMMDD-HHMMSS (the kubelet's name for rotated logs) and
// only the newest maxFiles-1 rotated files are kept beside the current one. The
// streams of one container share a Writer.
type Writer struct {
	path     string
	maxSize  int64
	maxFiles int
	now      func() time.Time

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open appends to the log at path (made when missing). maxSize <= 0 never rotates.
func Open(path string, maxSize int64, maxFiles int) (*Writer, error) {
	w := &Writer{path: path, maxSize: maxSize, maxFiles: max(maxFiles, 1), now: time.Now}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("open container log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open container log: %w", err)
	}
	w.f, w.size = f, st.Size()
	return nil
}

// Write appends one entry, rotating first when it would not fit.
func (w *Writer) Write(e Entry) error {
	line := e.Bytes()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return os.ErrClosed
	}
	if w.maxSize > 0 && w.size > 0 && w.size+int64(len(line)) > w.maxSize {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	n, err := w.f.Write(line)
	w.size += int64(n)
	return err
}

// rotate moves the current file aside, drops the oldest rotated files and starts anew.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return err
	}
	w.f = nil
	rotated := w.path + "." + w.now().UTC().Format("20060102-150405")
	for i := 1; exists(rotated); i++ { // two rotations within a second
		rotated = fmt.Sprintf("%s.%s-%d", w.path, w.now().UTC().Format("20060102-150405"), i)
	}
	if err := os.Rename(w.path, rotated); err != nil {
		return fmt.Errorf("rotate container log: %w", err)
	}
	old, err := Rotated(w.path)
	if err != nil {
		return err
	}
	for len(old) > w.maxFiles-1 {
		if err := os.Remove(old[0]); err != nil {
			return fmt.Errorf("remove rotated container log: %w", err)
		}
		old = old[1:]
	}
	return w.open()
}

// Rotated are the rotated files of the log at path, oldest first.
func Rotated(path string) ([]string, error) {
	matches, err := filepath.Glob(path + ".*")
	if err != nil {
		return nil, err
	}
	slices.SortFunc(matches, func(a, b string) int { return strings.Compare(rotationKey(a), rotationKey(b)) })
	return matches, nil
}

// Remove removes the log at path and its rotated files; a log never written is no error.
func Remove(path string) error {
	rotated, err := Rotated(path)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range append(rotated, path) {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove container log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// rotationKey orders PATH.20061002-150405 before PATH.20061002-150405-1 before -2.
func rotationKey(name string) string {
	suffix := name[strings.LastIndex(name, ".")+1:]
	stamp, seq, _ := strings.Cut(suffix, "-") // date
	clock, seq, _ := strings.Cut(seq, "-")    // time, then the optional sequence
	n, _ := strconv.Atoi(seq)
	return fmt.Sprintf("%s-%s-%06d", stamp, clock, n)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Close closes the file; later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
