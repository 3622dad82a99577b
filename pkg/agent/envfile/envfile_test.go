package envfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFind: the env file format as the kubelet reads it.
func TestFind(t *testing.T) {
	const file = `
# written by the init container
  DB_HOST='db.example'
GREETING='hello
world' # two lines
EMPTY= 'ignored'
LAST='x'`
	for key, want := range map[string]string{"DB_HOST": "db.example", "GREETING": "hello\nworld", "EMPTY": "", "LAST": "x", "NOPE": ""} {
		if got, err := find(strings.NewReader(file), key); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", key, got, err, want)
		}
	}
	for file, want := range map[string]string{
		"A='1'\nB\n":   "invalid environment variable format at line 2: missing '='",
		"='1'":         "invalid environment variable format at line 1: empty variable name",
		"A ='1'":       "invalid environment variable format at line 1: whitespace before '=' is not allowed",
		"A=1":          "invalid environment variable format at line 1: value must be enclosed in single quotes",
		"A='1' 2":      "invalid environment variable format at line 1: unexpected content after closing quote",
		"\nA='1\n2\n":  "invalid environment variable format starting at line 2: unclosed single quote",
		"A=\"double\"": "invalid environment variable format at line 1: value must be enclosed in single quotes",
	} {
		if _, err := find(strings.NewReader(file), "Z"); err == nil || err.Error() != want {
			t.Errorf("%q: err %v, want %q", file, err, want)
		}
	}
}

// TestLookupStaysInTheVolume: the file is read inside the volume's directory; a symlink
// the pod made to a file of the host, or a path with "..", is refused.
func TestLookupStaysInTheVolume(t *testing.T) {
	host := t.TempDir()
	secret := filepath.Join(host, "secret.env")
	if err := os.WriteFile(secret, []byte("KEY='host'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(host, "vol")
	if err := os.MkdirAll(filepath.Join(vol, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "sub", "app.env"), []byte("KEY='pod'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(vol, "link.env")); err != nil {
		t.Fatal(err)
	}
	if got, err := Lookup(vol, "sub/app.env", "KEY"); err != nil || got != "pod" {
		t.Errorf("sub/app.env = %q, %v", got, err)
	}
	for _, path := range []string{"link.env", "../secret.env"} {
		if got, err := Lookup(vol, path, "KEY"); err == nil {
			t.Errorf("%s read %q from outside the volume", path, got)
		}
	}
	if _, err := Lookup(vol, "missing.env", "KEY"); err == nil || !strings.Contains(err.Error(), `failed to open environment variable file "missing.env"`) {
		t.Errorf("missing file: %v", err)
	}
}
