package masq

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/network/nettest"
)

func TestRules(t *testing.T) {
	ns, r := nodeRules(t)
	save := func() string {
		out, err := exec.Command("nsenter", "--net="+ns, "sh", "-c", "iptables-save; ipset list "+NoMasqSet).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return string(out)
	}
	nettest.In(t, ns, func() error { return r.Sync([]string{"10.244.0.0/24", "10.244.1.0/24", "10.200.0.11"}) })
	nettest.In(t, ns, func() error { return r.Sync([]string{"10.244.1.0/24", "10.200.0.12"}) }) // again, changed
	nettest.In(t, ns, func() error { return r.Sync([]string{"10.244.1.0/24", "10.200.0.12"}) }) // unchanged
	out := save()
	for _, want := range []string{
		"-A POSTROUTING -m comment --comment \"minik8s pod egress\" -j MINIK8S-POSTROUTING",
		"-A MINIK8S-POSTROUTING -s 10.244.1.0/24 -m set ! --match-set MINIK8S-NOMASQ dst -m comment --comment \"minik8s pod egress\" -j MASQUERADE --random-fully",
		"-A MINIK8S-FORWARD -d 10.244.1.0/24",
		"10.200.0.12",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Count(out, "-j MASQUERADE") != 1 || strings.Count(out, "-j MINIK8S-POSTROUTING") != 1 || strings.Contains(out, "10.244.0.0") {
		t.Errorf("rules or set not exactly as wanted after three syncs:\n%s", out)
	}
	nettest.In(t, ns, Remove)
	if out, _ := exec.Command("nsenter", "--net="+ns, "sh", "-c", "iptables-save; ipset list -n").CombinedOutput(); strings.Contains(string(out), "MINIK8S") {
		t.Errorf("left after Remove:\n%s", out)
	}
}

// TestForwardJumpBelowServiceProxy: minilet's FORWARD ACCEPTs never shadow the service
// proxy's jumps (kube-proxy's REJECT for Services without endpoints lives behind them),
// whichever daemon wrote its rules first.
func TestForwardJumpBelowServiceProxy(t *testing.T) {
	ns, r := nodeRules(t)
	sh := func(script string) string {
		t.Helper()
		out, err := exec.Command("nsenter", "--net="+ns, "sh", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", script, err, out)
		}
		return string(out)
	}
	// The proxy's jumps are there first (as miniproxy inserts them, at the top).
	sh("iptables -N KUBE-SERVICES && iptables -I FORWARD 1 -m conntrack --ctstate NEW -m comment --comment 'kubernetes service portals' -j KUBE-SERVICES")
	order := func() (ours, kube []int) {
		for i, line := range strings.Split(sh("iptables -S FORWARD"), "\n") {
			switch {
			case strings.HasSuffix(line, "-j "+FilterChain):
				ours = append(ours, i)
			case strings.HasSuffix(line, "-j KUBE-SERVICES"):
				kube = append(kube, i)
			}
		}
		return ours, kube
	}
	check := func(when string) {
		t.Helper()
		if ours, kube := order(); len(ours) != 1 || len(kube) != 1 || ours[0] < kube[0] {
			t.Errorf("%s: want one jump to %s below KUBE-SERVICES's:\n%s", when, FilterChain, sh("iptables -S FORWARD"))
		}
	}
	nettest.In(t, ns, func() error { return r.Sync([]string{"10.244.1.0/24"}) })
	check("minilet after the proxy")
	// Ours on top (an older minilet, or written while the proxy's were missing): moved down.
	sh("iptables -D FORWARD -m comment --comment '" + comment + "' -j " + FilterChain +
		" && iptables -I FORWARD 1 -m comment --comment '" + comment + "' -j " + FilterChain)
	nettest.In(t, ns, func() error { return r.Sync([]string{"10.244.1.0/24"}) })
	check("ours found above the proxy's")
	nettest.In(t, ns, func() error { return r.Sync([]string{"10.244.1.0/24"}) })
	check("again, unchanged")
	nettest.In(t, ns, Remove)
}

// nodeRules is a fresh network namespace for a node and its masquerade rules for the pod
// CIDR 10.244.1.0/24, not yet written.
func nodeRules(t *testing.T) (string, *Rules) {
	t.Helper()
	ns := nettest.NetNS(t, "node")[0]
	testenv.RequireTools(t, "iptables", "ipset")
	_, cidr, _ := net.ParseCIDR("10.244.1.0/24")
	r, err := New(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return ns, r
}
