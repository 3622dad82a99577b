package apiproc

import (
	"os"
	"path/filepath"
	"testing"
)

// EnsurePKI makes the CA and the signing key once, and hands back the same ones again.
func TestEnsurePKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, saKey, err := EnsurePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if saKey != filepath.Join(dir, "sa.key") {
		t.Errorf("saKey = %s, want it in %s", saKey, dir)
	}
	key, err := os.ReadFile(saKey)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := EnsurePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Error("a second EnsurePKI made another CA")
	}
	if now, _ := os.ReadFile(saKey); string(now) != string(key) {
		t.Error("a second EnsurePKI made another signing key")
	}
}
