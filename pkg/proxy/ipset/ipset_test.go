package ipset

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/netnstest"
	"github.com/minik8s/minik8s/internal/testenv"
)

func TestScriptCreatesMissingSetsAndSendsOnlyTheDifference(t *testing.T) {
	cluster := New(ClusterIP, HashIPPort, "c")
	cluster.Add(IPPort("10.96.0.1", "TCP", 443))
	cluster.Add(IPPort("10.96.0.10", "UDP", 53))
	ports := New(NodePortTCP, BitmapPort, "n")
	ports.Add("30080")
	current := map[string]map[string]bool{
		ClusterIP: {"10.96.0.1,tcp:443": true, "10.96.0.99,tcp:80": true},
	}
	got := Script([]*Set{cluster, ports}, current)
	want := "del KUBE-CLUSTER-IP 10.96.0.99,tcp:80\n" +
		"add KUBE-CLUSTER-IP 10.96.0.10,udp:53\n" +
		"create KUBE-NODE-PORT-TCP bitmap:port range 0-65535 -exist\n" +
		"add KUBE-NODE-PORT-TCP 30080\n"
	if got != want {
		t.Fatalf("script:\n%s\nwant:\n%s", got, want)
	}
	if s := Script([]*Set{cluster}, map[string]map[string]bool{ClusterIP: cluster.Entries}); s != "" {
		t.Fatalf("nothing changed, yet the script is %q", s)
	}
}

func TestEntryForms(t *testing.T) {
	if got := IPPortIP("10.244.1.2", "TCP", 8080, "10.244.1.2"); got != "10.244.1.2,tcp:8080,10.244.1.2" {
		t.Fatalf("IPPortIP = %q", got)
	}
	if got := IPPort("10.96.0.10", "SCTP", 9); got != "10.96.0.10,sctp:9" {
		t.Fatalf("IPPort = %q", got)
	}
}

func TestParseSave(t *testing.T) {
	out := "create A hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1\n" +
		"add A 10.96.0.1,tcp:443\ncreate B bitmap:port range 0-65535\n"
	sets, err := ParseSave([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if !sets["A"]["10.96.0.1,tcp:443"] || len(sets["A"]) != 1 || sets["B"] == nil || len(sets["B"]) != 0 {
		t.Fatalf("parsed %v", sets)
	}
	if _, err := ParseSave([]byte("add C 1.2.3.4\n")); err == nil {
		t.Fatal("an entry of a set never created was accepted")
	}
}

func TestKubeSetsAreKubeProxys(t *testing.T) {
	sets := KubeSets()
	if len(sets) != len(KubeSetNames()) {
		t.Fatalf("%d sets, %d names", len(sets), len(KubeSetNames()))
	}
	for name, typ := range map[string]Type{ClusterIP: HashIPPort, LoopBack: HashIPPortIP, NodePortTCP: BitmapPort,
		LoadBalancerSourceCIDR: HashIPPortNet, IPVSIPs: HashIP} {
		if sets[name].Type != typ {
			t.Errorf("%s: type %s, want %s", name, sets[name].Type, typ)
		}
	}
	for _, n := range KubeSetNames() {
		if len(n) > 31 {
			t.Errorf("%s: longer than the kernel's 31 characters", n)
		}
	}
}

// TestSyncerAgainstTheKernel writes kube-proxy's sets into a network namespace made for the
// test (ipsets are per namespace), changes one entry, and reads the kernel back each time.
func TestSyncerAgainstTheKernel(t *testing.T) {
	testenv.RequireRoot(t, "creates a network namespace and ip sets in it")
	testenv.RequireTools(t, "ipset")
	netnstest.Enter(t) // exec'd ipset inherits the test's namespace
	ctx := context.Background()
	build := func(endpoints ...string) []*Set {
		sets := KubeSets()
		for _, ep := range endpoints {
			sets[ClusterIP].Add(IPPort("10.96.0.10", "TCP", 80))
			sets[LoopBack].Add(IPPortIP(ep, "TCP", 8080, ep))
		}
		sets[NodePortTCP].Add("30080")
		var out []*Set
		for _, n := range KubeSetNames() {
			out = append(out, sets[n])
		}
		return out
	}
	var s Syncer
	n, err := s.Sync(ctx, build("10.244.1.2", "10.244.2.2"))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(KubeSetNames()) + 4; n != want {
		t.Errorf("first sync wrote %d lines, want %d (every create and 4 adds)", n, want)
	}
	check := func(set string, want ...string) {
		t.Helper()
		have, err := Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := have[set]
		if !ok {
			t.Fatalf("set %s missing in the kernel", set)
		}
		if len(got) != len(want) {
			t.Fatalf("%s holds %v, want %v", set, got, want)
		}
		for _, w := range want {
			if !got[w] {
				t.Fatalf("%s holds %v, want %v", set, got, want)
			}
		}
	}
	check(LoopBack, "10.244.1.2,tcp:8080,10.244.1.2", "10.244.2.2,tcp:8080,10.244.2.2")
	check(NodePortTCP, "30080")
	check(IPVSIPs)

	n, err = s.Sync(ctx, build("10.244.1.2", "10.244.3.2"))
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("one endpoint replaced: %d lines written, want 2 (a del and an add)", n)
	}
	check(LoopBack, "10.244.1.2,tcp:8080,10.244.1.2", "10.244.3.2,tcp:8080,10.244.3.2")

	// A full sync compares with the kernel: an entry added behind our back is removed.
	if err := Restore(ctx, "add KUBE-NODE-PORT-TCP 31000\n"); err != nil {
		t.Fatal(err)
	}
	s.Reset()
	if _, err := s.Sync(ctx, build("10.244.1.2", "10.244.3.2")); err != nil {
		t.Fatal(err)
	}
	check(NodePortTCP, "30080")

	if err := Destroy(ctx, KubeSetNames()...); err != nil {
		t.Fatal(err)
	}
	have, err := Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range KubeSetNames() {
		if _, ok := have[name]; ok {
			t.Errorf("%s still there after Destroy", name)
		}
	}
	if err := Restore(ctx, "add NO-SUCH-SET 1.2.3.4\n"); err == nil || !strings.Contains(err.Error(), "ipset restore") {
		t.Errorf("a bad script gave %v, want an ipset restore error", err)
	}
}
