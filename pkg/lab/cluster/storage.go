package cluster

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/minik8s/minik8s/deploy/addons"
	"github.com/minik8s/minik8s/pkg/lab"
)

// deployStorage installs the default StorageClass, its volumes under the lab's state
// directory (so `minilab down` removes them with the lab).
func deployStorage(ctx context.Context, l *lab.Lab, progress io.Writer) error {
	step(progress, "adding the default StorageClass (node-local volumes)")
	manifest := filepath.Join(l.StateDir, "storage.yaml")
	if err := os.WriteFile(manifest, addons.StorageClass(filepath.Join(l.StateDir, "storage")), 0o644); err != nil {
		return err
	}
	_, err := Kubectl(ctx, l, "apply", "-f", manifest)
	return err
}
