package crilog

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEntriesRoundTrip(t *testing.T) {
	at := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	line := Entry{Time: at, Stream: Stdout, Content: []byte("hello world")}.Bytes()
	if string(line) != "2016-10-06T00:17:09.669794202Z stdout F hello world\n" {
		t.Fatalf("line %q", line)
	}
	e, err := Parse(line)
	if err != nil || !e.Time.Equal(at) || e.Stream != Stdout || e.Partial || string(e.Output()) != "hello world\n" {
		t.Errorf("Parse = %+v, %v", e, err)
	}
	if e, err := Parse([]byte("2016-10-06T00:17:09Z stderr P ")); err != nil || !e.Partial || len(e.Output()) != 0 {
		t.Errorf("empty partial entry: %+v, %v", e, err)
	}
	for _, bad := range []string{"", "hello", "yesterday stdout F x", "2016-10-06T00:17:09Z stdin F x", "2016-10-06T00:17:09Z stdout X x"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestStreamSplitsLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	w, err := Open(path, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	out, errs := NewStream(w, Stdout), NewStream(w, Stderr)
	out.Write([]byte("one\ntw"))
	errs.Write([]byte("oops\n"))
	out.Write([]byte("o\n" + strings.Repeat("x", MaxEntry+5) + "\nunfinished"))
	out.Close()
	errs.Close()
	w.Close()
	var got []string
	for _, line := range strings.SplitAfter(readFile(t, path), "\n") {
		if line == "" {
			continue
		}
		e, err := Parse([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		tag := "F"
		if e.Partial {
			tag = "P"
		}
		got = append(got, e.Stream+" "+tag+" "+string(e.Content[:min(len(e.Content), 3)]))
	}
	want := []string{"stdout F one", "stderr F oop", "stdout F two", "stdout P xxx", "stdout F xxx", "stdout P unf"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("entries %q, want %q", got, want)
	}
}

func TestWriterRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	w, err := Open(path, 200, 3)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w.now = func() time.Time { clock = clock.Add(time.Second / 2); return clock }
	s := NewStream(w, Stdout)
	for i := range 20 {
		s.Write([]byte(strings.Repeat(string(rune('a'+i)), 40) + "\n")) // 40 + 45 bytes of prefix each
	}
	w.Close()
	rotated, err := Rotated(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated) != 2 {
		t.Fatalf("rotated files %v, want 2 kept beside the current one", rotated)
	}
	for _, p := range append(rotated, path) {
		if fi, err := os.Stat(p); err != nil || fi.Size() > 200 {
			t.Errorf("%s: %v, %v; want at most 200 bytes", p, fi, err)
		}
	}
	// The newest output is in the current file, the one before in the newest rotated.
	if cur := readFile(t, path); !strings.Contains(cur, strings.Repeat("t", 40)) {
		t.Errorf("current file lacks the last line: %q", cur)
	}
	if prev := readFile(t, rotated[1]); !strings.Contains(prev, strings.Repeat("r", 40)) {
		t.Errorf("newest rotated file %s lacks the lines before: %q", rotated[1], prev)
	}
	if !strings.HasPrefix(filepath.Base(rotated[0]), "0.log.20260102-") {
		t.Errorf("rotated name %s, want 0.log.YYYYMMDD-HHMMSS", rotated[0])
	}
}

func TestReaderOptionsAndRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	w, err := Open(path, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, line := range []string{"a", "b", "c", "d"} {
		w.Write(Entry{Time: base.Add(time.Duration(i) * time.Second), Stream: Stdout, Content: []byte(line)})
	}
	for _, tc := range []struct {
		opts ReadOptions
		want string
	}{
		{ReadOptions{Tail: -1}, "a\nb\nc\nd\n"},
		{ReadOptions{Tail: 2}, "c\nd\n"},
		{ReadOptions{Tail: 0}, ""},
		{ReadOptions{Tail: -1, Since: base.Add(2 * time.Second)}, "c\nd\n"},
		{ReadOptions{Tail: 1, Timestamps: true}, "2026-01-02T03:04:08Z d\n"},
	} {
		if got := readAll(t, path, tc.opts); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.opts, got, tc.want)
		}
	}

	// A follower reads on into the file that replaced the one it had open.
	r, err := OpenReader(path, ReadOptions{Tail: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var b bytes.Buffer
	r.CopyTo(&b)
	w.Write(Entry{Time: base, Stream: Stdout, Content: []byte("e")})
	w.rotate()
	w.Write(Entry{Time: base, Stream: Stderr, Content: []byte("f")})
	r.CopyTo(&b)
	if b.String() != "d\ne\nf\n" {
		t.Errorf("following across a rotation: %q, want d e f", b.String())
	}
}

// TestTimestampsOnlyBeforeALine: --timestamps prints an entry's time only where a line
// starts, not before the rest of a line split into partial entries, as the kubelet's
// ReadLogs (k8s.io/cri-client logs.go) prefixes only at a new line.
func TestTimestampsOnlyBeforeALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	w, err := Open(path, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, e := range []Entry{
		{Stream: Stdout, Content: []byte("long "), Partial: true},
		{Stream: Stdout, Content: []byte("line")},
		{Stream: Stdout, Content: []byte("short")},
	} {
		e.Time = base.Add(time.Duration(i) * time.Second)
		w.Write(e)
	}
	got := readAll(t, path, ReadOptions{Tail: -1, Timestamps: true})
	if want := "2026-01-02T03:04:05Z long line\n2026-01-02T03:04:07Z short\n"; got != want {
		t.Errorf("timestamps over a split line: %q, want %q", got, want)
	}
}

// readAll is what a Reader of the log at path with opts prints.
func readAll(t *testing.T, path string, opts ReadOptions) string {
	t.Helper()
	r, err := OpenReader(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var b bytes.Buffer
	if _, err := r.CopyTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
func TestSeekTail(t *testing.T) {
	for _, tc := range []struct {
		content string
		n       int64
		want    string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"a\nb\nc\n", 0, ""},
		{"", 3, ""},
	} {
		path := filepath.Join(t.TempDir(), "0.log")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := seekTail(f, tc.n); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(f)
		f.Close()
		if string(got) != tc.want {
			t.Errorf("tail %d of %q = %q, want %q", tc.n, tc.content, got, tc.want)
		}
	}
}
