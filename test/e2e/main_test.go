// Package e2e runs end-to-end scenarios on a minilab cluster: real miniapi, minilet,
// containerd, CNI plugins and network namespaces. Every request to a lab address is made
// from inside a lab namespace; nothing routes from the host into the lab.
package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
)

// env says where the binaries and images built by `make build` are.
type env struct {
	binDir, imagesDir string
}

func requireEnv(t *testing.T) env {
	t.Helper()
	testenv.RequireRoot(t, "end-to-end tests make network namespaces and run containerd")
	testenv.RequireTools(t, "containerd", "runc", "kubectl", "nsenter")
	e := env{binDir: envOr("MINIK8S_BIN", "../../bin"), imagesDir: envOr("MINIK8S_IMAGES", "../../images/out")}
	for _, p := range []string{filepath.Join(e.binDir, "miniapi"), filepath.Join(e.binDir, "minilet"), filepath.Join(e.imagesDir, "netexec.tar")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make build` first (or `make test`, which does): %v", p, err)
		}
	}
	return e
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	abs, _ := filepath.Abs(def)
	return abs
}

// uniqueName gives each lab its own namespaces, links and directories.
func uniqueName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}
