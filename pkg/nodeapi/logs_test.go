package nodeapi

import (
	"os"
	"path/filepath"
	"testing"
)

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
