package ipvs

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/netnstest"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/proxy/ipset"
)

// TestNewRefusesAKernelWithoutIPVS: on a kernel without IPVS (this development host's) the
// proxier does not start, and says what to load.
func TestNewRefusesAKernelWithoutIPVS(t *testing.T) {
	if _, err := os.Stat("/proc/net/ip_vs"); err == nil {
		t.Skip("this kernel has IPVS")
	}
	_, err := New(Config{}, nil, nil, "node", slog.Default())
	if err == nil || !strings.Contains(err.Error(), "modprobe ip_vs") {
		t.Fatalf("New on a kernel without IPVS: %v, want an error naming modprobe ip_vs", err)
	}
}

// TestCleanupWithoutIPVS: --cleanup on a kernel without IPVS still removes the chains, jumps
// and sets, in a network namespace made for the test.
func TestCleanupWithoutIPVS(t *testing.T) {
	testenv.RequireRoot(t, "creates a network namespace with chains and sets in it")
	testenv.RequireTools(t, "iptables-restore", "iptables-save", "ipset")
	netnstest.Enter(t) // programs run from here inherit the test's namespace
	ctx := context.Background()
	st := desiredState(Config{}, ports(), nil)
	var s ipset.Syncer
	if _, err := s.Sync(ctx, st.orderedSets()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("iptables-restore", "-w", "5", "--noflush")
	cmd.Stdin = strings.NewReader(withJumps(buildRules(Config{}, st.sets).restore(), jumps))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("iptables-restore: %v: %s", err, out)
	}
	missing, err := missingJumps(ctx)
	must(t, err)
	if len(missing) != 0 {
		t.Fatalf("jumps written but read back as missing: %v", missing)
	}
	if !strings.Contains(run(t, "iptables-save", "-t", "nat"), "--match-set KUBE-CLUSTER-IP") {
		t.Fatal("rules not written")
	}
	must(t, Cleanup(ctx))
	if out := run(t, "iptables-save"); strings.Contains(out, "KUBE-") {
		t.Errorf("left after cleanup:\n%s", out)
	}
	if out := run(t, "ipset", "list", "-n"); strings.Contains(out, "KUBE-") {
		t.Errorf("sets left after cleanup: %s", out)
	}
}
