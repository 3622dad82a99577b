package volumes

import (
	"os"
	"path/filepath"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestWriteAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	changed, err := writeAtomically(dir, map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o400}})
	if err != nil || !changed {
		t.Fatalf("first write: %v, %v", changed, err)
	}
	if read(t, filepath.Join(dir, "a")) != "1" || read(t, filepath.Join(dir, "sub/b")) != "2" {
		t.Fatal("contents wrong")
	}
	if target, err := os.Readlink(filepath.Join(dir, "a")); err != nil || target != "..data/a" {
		t.Errorf("a links to %q, %v; want ..data/a", target, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "sub/b")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("mode of sub/b: %v, %v", fi.Mode(), err)
	}
	first, _ := os.Readlink(filepath.Join(dir, dataLink))

	if changed, err := writeAtomically(dir, map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o400}}); err != nil || changed {
		t.Errorf("same payload again: changed=%v err=%v", changed, err)
	}

	changed, err = writeAtomically(dir, map[string]File{"a": {Data: []byte("new"), Mode: 0o644}, "c": {Data: []byte("3"), Mode: 0o644}})
	if err != nil || !changed {
		t.Fatalf("update: %v, %v", changed, err)
	}
	if read(t, filepath.Join(dir, "a")) != "new" || read(t, filepath.Join(dir, "c")) != "3" {
		t.Error("update not visible")
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("sub left after it left the payload: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("old version %s left behind", first)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "..data", "a/../../x"} {
		if _, err := writeAtomically(dir, map[string]File{bad: {Data: []byte("x"), Mode: 0o644}}); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
}
