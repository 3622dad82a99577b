package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// upLab brings up a minilab cluster of n nodes for the test, prints its daemons' logs if the
// test fails, and takes it down when the test ends.
func upLab(t *testing.T, prefix string, nodes int) *lab.Lab {
	t.Helper()
	return upLabWith(t, prefix, cluster.Options{Nodes: nodes})
}

// upLabWith is upLab with more of cluster.Options (o.Nodes and the like).
func upLabWith(t *testing.T, prefix string, o cluster.Options) *lab.Lab {
	t.Helper()
	e := requireEnv(t)
	name := uniqueName(prefix)
	o.Name, o.BinDir, o.ImagesDir, o.Progress = name, e.binDir, e.imagesDir, testWriter{t}
	l, err := cluster.Up(context.Background(), o)
	if err != nil {
		t.Fatalf("minilab up: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Down(context.Background(), name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	dumpLogsOnFailure(t, l)
	return l
}

// mustKubectl runs kubectl inside the lab and fails the test when it fails.
func mustKubectl(t *testing.T, l *lab.Lab, args ...string) string {
	t.Helper()
	out, err := cluster.Kubectl(context.Background(), l, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// applyYAML applies a manifest inside the lab.
func applyYAML(t *testing.T, l *lab.Lab, manifest string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, l, "apply", "-f", path)
}
