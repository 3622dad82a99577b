package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/minik8s/minik8s/pkg/testenv"
)

// The CI subset of the conformance suite (docs/conformance.md): api-machinery and the apps
// controllers other than StatefulSet, without what miniapi does not serve (CRDs,
// admission webhooks and policies, the aggregator, API priority and fairness).
const (
	subsetFocus = `\[sig-api-machinery\]|\[sig-apps\] (Deployment|ReplicaSet|ReplicationController|Job|ControllerRevision)`
	subsetSkip  = `CustomResource|AdmissionWebhook|ValidatingAdmissionPolicy|MutatingAdmissionPolicy|Aggregator|FlowSchema|PriorityLevelConfiguration|API priority`
)

// TestConformanceSubset runs the subset with hack/conformance.sh (the e2e.test build is
// cached in ~/.cache/minik8s: a cold build costs about 10 minutes of 2 cores) on a fresh
// 2-node minilab, and fails on every failed test.
func TestConformanceSubset(t *testing.T) {
	testenv.RequireRoot(t, "the conformance suite runs on a minilab")
	testenv.RequireTools(t, "containerd", "runc", "kubectl", "nsenter", "ip")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testenv.RequireFile(t, filepath.Join(envOr("MINIK8S_BIN", filepath.Join(root, "bin")), "minilab"), "minilab (make build)")
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "conformance.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "FOCUS="+subsetFocus, "SKIP="+subsetSkip, "CONFORMANCE_OUT="+out, "CONFORMANCE_TIMEOUT=25m")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr // the progress lines and the summary
	runErr := cmd.Run()
	results, err := Read(filepath.Join(out, "junit_01.xml"))
	if err != nil {
		t.Fatalf("conformance run (%v) left no report: %v", runErr, err)
	}
	passed := 0
	for _, r := range results {
		switch r.Status {
		case "failed":
			t.Errorf("FAILED %s: %s", r.Name, r.Message)
		case "passed":
			passed++
		}
	}
	if passed == 0 {
		t.Errorf("no test of the subset passed (run: %v)", runErr)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
