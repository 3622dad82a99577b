package benchapi

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStartCPUProfile: a profile is written to the file once stopped; no file name, no
// profile, and stop is harmless.
func TestStartCPUProfile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := StartCPUProfile(file)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
		t.Errorf("profile file: %v, %v", fi, err)
	}
	stop, err = StartCPUProfile("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := StartCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil {
		t.Error("a file that cannot be created: no error")
	}
}
