// Package labtest holds what tests on a minilab cluster share beyond internal/testenv (which
// cannot import the lab: the lab's own tests use it).
package labtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// DumpLogsOnFailure prints what the cluster shows (nodes and their taints, pods, warning
// events) and the lab's daemon logs when the test fails, before cleanup.
func DumpLogsOnFailure(t *testing.T, l *lab.Lab) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, args := range [][]string{
			{"get", "nodes", "-o", `custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].key,CONDITIONS:.status.conditions[?(@.status=="True")].type`},
			{"get", "pods", "-A", "-o", "wide"},
			{"get", "events", "-A", "--field-selector", "type=Warning"},
		} {
			// Bounded: the lab's API may be the thing that broke.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			out, err := cluster.Kubectl(ctx, l, append(args, "--request-timeout=15s")...)
			cancel()
			t.Logf("---- kubectl %s (%v) ----\n%s", strings.Join(args, " "), err, out)
		}
		logs, _ := filepath.Glob(filepath.Join(l.StateDir, "logs", "*.log"))
		for _, f := range logs {
			data, _ := os.ReadFile(f)
			if len(data) > 6000 {
				data = data[len(data)-6000:]
			}
			t.Logf("---- %s ----\n%s", f, data)
		}
	})
}
