package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// Built says where `make build` put what the end-to-end tests run: $MINIK8S_BIN and
// $MINIK8S_IMAGES, else the repository's bin and images/out seen from a package two levels
// down (test/e2e, test/labs).
type Built struct {
	BinDir, ImagesDir string
}

// RequireBuilt is what a test on a minilab cluster needs: root, containerd and its tools,
// kubectl, and the built binaries and images.
func RequireBuilt(t testing.TB) Built {
	t.Helper()
	RequireRoot(t, "end-to-end tests make network namespaces and run containerd")
	RequireTools(t, "containerd", "runc", "kubectl", "nsenter")
	b := Built{BinDir: dirFromEnv("MINIK8S_BIN", "../../bin"), ImagesDir: dirFromEnv("MINIK8S_IMAGES", "../../images/out")}
	for _, p := range []string{filepath.Join(b.BinDir, "miniapi"), filepath.Join(b.BinDir, "minilet"), filepath.Join(b.ImagesDir, "netexec.tar")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make build` first (or `make test`, which does): %v", p, err)
		}
	}
	return b
}

func dirFromEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	abs, _ := filepath.Abs(def)
	return abs
}

// UniqueName gives each lab its own namespaces, links and directories.
func UniqueName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}
