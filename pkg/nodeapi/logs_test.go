package nodeapi

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

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

func TestPreviousLog(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"0.log", "1.log", "3.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := previousLog(filepath.Join(dir, "3.log")); err != nil || got != filepath.Join(dir, "1.log") {
		t.Errorf("previous of 3.log = %q, %v; want 1.log", got, err)
	}
	if _, err := previousLog(filepath.Join(dir, "0.log")); err == nil {
		t.Error("the first run has no previous log, got one")
	}
}
