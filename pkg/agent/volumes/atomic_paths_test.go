package volumes

import (
	"path/filepath"
	"testing"
)

// TestWriteAtomicallyCleansPaths: an item path the API lets through uncleaned
// ("./app.conf", "conf//app.conf") is written under its clean name, visible in the
// volume, and not rewritten at the next sync, as the kubelet's atomic writer cleans the
// payload's paths first.
func TestWriteAtomicallyCleansPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	payload := map[string]File{"./app.conf": {Data: []byte("1"), Mode: 0o644}, "conf//b": {Data: []byte("2"), Mode: 0o644}}
	if _, err := writeAtomically(dir, payload); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "app.conf")) != "1" || read(t, filepath.Join(dir, "conf/b")) != "2" {
		t.Error("files not visible under their clean names")
	}
	if changed, err := writeAtomically(dir, payload); err != nil || changed {
		t.Errorf("the same payload again: changed %v (%v), want unchanged", changed, err)
	}
}
