package allocator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func openStore(t *testing.T, path string) *store.Bolt {
	t.Helper()
	st, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func owner(n int) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Service", Namespace: "default", Name: fmt.Sprint("svc-", n), UID: types.UID(fmt.Sprint("uid-", n))}
}

func mustRange(t *testing.T, st store.Interface, cidr string) *IPRange {
	t.Helper()
	r, err := NewIPRange(st, netip.MustParsePrefix(cidr))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestIPRangeBounds(t *testing.T) {
	st := storetest.Bolt(t)
	for _, tc := range []struct {
		cidr, first string
		size        uint64
	}{
		{"10.96.0.0/12", "10.96.0.1", 1<<20 - 2},
		{"10.0.0.0/30", "10.0.0.1", 2},
		{"fd00::/120", "fd00::1", 255},
	} {
		r := mustRange(t, st, tc.cidr)
		if r.First().String() != tc.first || r.size != tc.size {
			t.Errorf("%s: first %s size %d, want %s %d", tc.cidr, r.First(), r.size, tc.first, tc.size)
		}
	}
	if _, err := NewIPRange(st, netip.MustParsePrefix("10.0.0.0/31")); err == nil {
		t.Error("a /31 has no usable service address and should be refused")
	}
}

func TestIPAllocateRequested(t *testing.T) {
	ctx := context.Background()
	r := mustRange(t, storetest.Bolt(t), "10.0.0.0/24")
	ip := netip.MustParseAddr("10.0.0.10")
	if err := r.Allocate(ctx, ip, owner(1)); err != nil {
		t.Fatal(err)
	}
	if err := r.Allocate(ctx, ip, owner(2)); !errors.Is(err, ErrIPAllocated) {
		t.Errorf("second allocation of %s: %v, want %v", ip, err, ErrIPAllocated)
	}
	for _, bad := range []string{"10.0.1.1", "10.0.0.0", "10.0.0.255"} {
		if err := r.Allocate(ctx, netip.MustParseAddr(bad), owner(3)); !errors.Is(err, ErrMismatchedNetwork) {
			t.Errorf("allocate %s: %v, want not in range", bad, err)
		}
	}
	// Only the holder can release it.
	if err := r.Release(ctx, ip, owner(2)); err != nil {
		t.Fatal(err)
	}
	if err := r.Allocate(ctx, ip, owner(2)); !errors.Is(err, ErrIPAllocated) {
		t.Errorf("a release by a non-holder freed %s: %v", ip, err)
	}
	if err := r.Release(ctx, ip, owner(1)); err != nil {
		t.Fatal(err)
	}
	if err := r.Allocate(ctx, ip, owner(2)); err != nil {
		t.Errorf("after release by its holder, %s should be free: %v", ip, err)
	}
}

func TestIPAllocateNextFillsTheRangeWithoutDuplicates(t *testing.T) {
	ctx := context.Background()
	r := mustRange(t, storetest.Bolt(t), "10.0.0.0/26") // 62 usable, static band 16
	var mu sync.Mutex
	seen := map[netip.Addr]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 62)
	for n := 0; n < 62; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ip, err := r.AllocateNext(ctx, owner(n))
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			seen[ip]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != 62 {
		t.Errorf("62 concurrent allocations got %d distinct IPs", len(seen))
	}
	for ip, n := range seen {
		if n != 1 || !r.CIDR().Contains(ip) || ip == r.CIDR().Addr() {
			t.Errorf("IP %s handed out %d times", ip, n)
		}
	}
	if _, err := r.AllocateNext(ctx, owner(99)); !errors.Is(err, ErrFull) {
		t.Errorf("allocation from a full range: %v, want %v", err, ErrFull)
	}
}

func TestIPAllocateNextPrefersTheDynamicBand(t *testing.T) {
	ctx := context.Background()
	r := mustRange(t, storetest.Bolt(t), "10.0.0.0/24") // 254 usable, the first 16 are static
	for n := 0; n < 50; n++ {
		ip, err := r.AllocateNext(ctx, owner(n))
		if err != nil {
			t.Fatal(err)
		}
		if i, _ := r.offset(ip); i < r.static {
			t.Errorf("dynamic allocation %d took %s from the static band while the rest was free", n, ip)
		}
	}
}

func TestAllocationsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st := openStore(t, path)
	r := mustRange(t, st, "10.96.0.0/12")
	ip, err := r.AllocateNext(ctx, owner(1))
	if err != nil {
		t.Fatal(err)
	}
	ports, err := NewPortRange(st, DefaultNodePorts)
	if err != nil {
		t.Fatal(err)
	}
	port, err := ports.AllocateNext(ctx, owner(1))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	st = openStore(t, path)
	defer st.Close()
	r = mustRange(t, st, "10.96.0.0/12")
	if err := r.Allocate(ctx, ip, owner(2)); !errors.Is(err, ErrIPAllocated) {
		t.Errorf("after a restart %s should still be held: %v", ip, err)
	}
	ports, _ = NewPortRange(st, DefaultNodePorts)
	if err := ports.Allocate(ctx, port, owner(2)); !errors.Is(err, ErrPortAllocated) {
		t.Errorf("after a restart port %d should still be held: %v", port, err)
	}
}

func TestDryRunHoldsNothing(t *testing.T) {
	ctx := context.Background()
	st := storetest.Bolt(t)
	ports, err := NewPortRange(st, PortSpan{Base: 30000, Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	ranges := Ranges{ServiceIPs: mustRange(t, st, "10.0.0.0/29"), NodePorts: ports}
	dry := ranges.DryRun()
	if _, err := dry.ServiceIPs.AllocateNext(ctx, owner(1)); err != nil {
		t.Fatal(err)
	}
	if err := dry.NodePorts.Allocate(ctx, 30001, owner(1)); err != nil {
		t.Fatal(err)
	}
	if kvs, _, err := st.List(ctx, "/registry/"); err != nil || len(kvs) != 0 {
		t.Errorf("dry run wrote %d keys (%v)", len(kvs), err)
	}
	if err := ranges.NodePorts.Allocate(ctx, 30001, owner(1)); err != nil {
		t.Fatal(err)
	}
	if err := dry.NodePorts.Allocate(ctx, 30001, owner(2)); !errors.Is(err, ErrPortAllocated) {
		t.Errorf("dry run of a held port: %v, want %v", err, ErrPortAllocated)
	}
}

func TestPortRange(t *testing.T) {
	ctx := context.Background()
	ports, err := NewPortRange(storetest.Bolt(t), PortSpan{Base: 30000, Size: 40})
	if err != nil {
		t.Fatal(err)
	}
	var notIn *PortNotInRangeError
	if err := ports.Allocate(ctx, 29999, owner(1)); !errors.As(err, &notIn) || notIn.Error() != "provided port is not in the valid range. The range of valid ports is 30000-30039" {
		t.Errorf("port below the range: %v", err)
	}
	got := map[int]bool{}
	for n := 0; n < 40; n++ {
		p, err := ports.AllocateNext(ctx, owner(n))
		if err != nil {
			t.Fatal(err)
		}
		if got[p] || p < 30000 || p > 30039 {
			t.Fatalf("port %d handed out twice or out of range", p)
		}
		got[p] = true
	}
	if _, err := ports.AllocateNext(ctx, owner(41)); !errors.Is(err, ErrFull) {
		t.Errorf("full port range: %v", err)
	}
	if _, err := NewPortRange(storetest.Bolt(t), PortSpan{Base: 65000, Size: 1000}); err == nil {
		t.Error("a range past 65535 should be refused")
	}
}

// Cluster IPs held the old way (owner references under /registry/ranges/serviceips/) stay
// held, as IPAddresses of their Services.
func TestMigrateLegacyServiceIPs(t *testing.T) {
	ctx := context.Background()
	st := storetest.Bolt(t)
	value, _ := json.Marshal(owner(1))
	if _, err := st.Create(ctx, "/registry/ranges/serviceips/10.0.0.10", value); err != nil {
		t.Fatal(err)
	}
	r := mustRange(t, st, "10.0.0.0/24")
	if err := r.MigrateLegacy(ctx); err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr("10.0.0.10")
	if err := r.Allocate(ctx, ip, owner(2)); !errors.Is(err, ErrIPAllocated) {
		t.Errorf("a migrated IP should stay held: %v", err)
	}
	if kvs, _, err := st.List(ctx, "/registry/ranges/serviceips/"); err != nil || len(kvs) != 0 {
		t.Errorf("%d legacy keys left (%v)", len(kvs), err)
	}
	if err := r.Release(ctx, ip, owner(1)); err != nil {
		t.Fatal(err)
	}
	if err := r.Allocate(ctx, ip, owner(2)); err != nil {
		t.Errorf("the migrated IP's Service released it: %v", err)
	}
}

// TestDryRunAnswersAsKube: a dry run answers as kube-apiserver's allocators do without
// looking for a free value: a cluster IP left to the server is the range's network
// address and a requested one is only checked against the range; node ports left to the
// server are one past the highest answered in the request, from 32769 (kube's guess),
// and a requested one is refused only when held already, or twice in the request.
func TestDryRunAnswersAsKube(t *testing.T) {
	ctx := context.Background()
	st := storetest.Bolt(t)
	ports, err := NewPortRange(st, DefaultNodePorts)
	if err != nil {
		t.Fatal(err)
	}
	ranges := Ranges{ServiceIPs: mustRange(t, st, "10.0.0.0/29"), NodePorts: ports}
	held := ranges.ServiceIPs.First()
	if err := ranges.ServiceIPs.Allocate(ctx, held, owner(1)); err != nil {
		t.Fatal(err)
	}
	if err := ranges.NodePorts.Allocate(ctx, 30001, owner(1)); err != nil {
		t.Fatal(err)
	}
	dry := ranges.DryRun()
	if ip, err := dry.ServiceIPs.AllocateNext(ctx, owner(2)); err != nil || ip != netip.MustParseAddr("10.0.0.0") {
		t.Errorf("dry next IP %v, %v; want the network address", ip, err)
	}
	if err := dry.ServiceIPs.Allocate(ctx, held, owner(2)); err != nil {
		t.Errorf("dry run of a held IP: %v, want it taken (kube checks only the range)", err)
	}
	if err := dry.ServiceIPs.Allocate(ctx, netip.MustParseAddr("10.1.0.1"), owner(2)); err == nil ||
		err.Error() != "the provided IP (10.1.0.1) is not in the valid range. The range of valid IPs is 10.0.0.0/29" {
		t.Errorf("dry run of an IP out of range: %v, want kube's words", err)
	}
	if err := dry.NodePorts.Allocate(ctx, 30001, owner(2)); !errors.Is(err, ErrPortAllocated) {
		t.Errorf("dry run of a held port: %v, want %v", err, ErrPortAllocated)
	}
	if err := dry.NodePorts.Allocate(ctx, 30002, owner(2)); err != nil {
		t.Fatal(err)
	}
	if err := dry.NodePorts.Allocate(ctx, 30002, owner(2)); !errors.Is(err, ErrPortAllocated) {
		t.Errorf("a port asked twice in one dry run: %v, want %v", err, ErrPortAllocated)
	}
	if err := dry.NodePorts.Allocate(ctx, 32769, owner(2)); err != nil {
		t.Errorf("dry run of a port out of range: %v, want it taken (kube's dry run checks no range)", err)
	}
	for _, want := range []int{32770, 32771} { // one past the highest answered
		if port, err := dry.NodePorts.AllocateNext(ctx, owner(2)); err != nil || port != want {
			t.Errorf("dry next port %d, %v; want %d", port, err, want)
		}
	}
	fresh := ranges.DryRun().NodePorts
	for _, want := range []int{32769, 32770} {
		if port, err := fresh.AllocateNext(ctx, owner(3)); err != nil || port != want {
			t.Errorf("a new dry run's next port %d, %v; want %d", port, err, want)
		}
	}
}

// Beyond the default range, cluster IPs come from every other ServiceCIDR that is Ready and
// not being deleted, as kube-apiserver's allocator of ServiceCIDRs: a requested IP in one,
// and the next free IP once the default range is full. An IP is given back whatever range
// it came from, the range since deleted too.
func TestIPsFromOtherServiceCIDRs(t *testing.T) {
	ctx := context.Background()
	st := storetest.Bolt(t)
	putCIDR := func(name, cidr string, ready, deleting bool) {
		t.Helper()
		c := networkingv1.ServiceCIDR{TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "ServiceCIDR"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{cidr}}}
		if ready {
			c.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue}}
		}
		if deleting {
			c.DeletionTimestamp = ptr.To(metav1.Now())
		}
		data, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Create(ctx, serviceCIDRsPrefix+name, data); err != nil {
			t.Fatal(err)
		}
	}
	putCIDR("kubernetes", "10.0.0.0/29", true, false)
	putCIDR("extra", "10.1.0.0/29", true, false)
	putCIDR("unready", "10.2.0.0/29", false, false)
	putCIDR("leaving", "10.3.0.0/29", true, true)
	r := mustRange(t, st, "10.0.0.0/29") // 6 usable
	for ip, want := range map[string]error{"10.1.0.3": nil, "10.2.0.3": ErrMismatchedNetwork, "10.3.0.3": ErrMismatchedNetwork, "10.1.0.0": ErrMismatchedNetwork} {
		if err := r.Allocate(ctx, netip.MustParseAddr(ip), owner(1)); !errors.Is(err, want) {
			t.Errorf("allocate %s: %v, want %v", ip, err, want)
		}
	}
	if err := r.dryRun().Allocate(ctx, netip.MustParseAddr("10.1.0.4"), owner(2)); err != nil {
		t.Errorf("dry-run allocation in another ServiceCIDR: %v", err)
	}
	for n := 0; n < 6; n++ {
		if ip, err := r.AllocateNext(ctx, owner(10+n)); err != nil || !r.CIDR().Contains(ip) {
			t.Fatalf("allocation %d: %s, %v, want one of the default range", n, ip, err)
		}
	}
	ip, err := r.AllocateNext(ctx, owner(20))
	if err != nil || !netip.MustParsePrefix("10.1.0.0/29").Contains(ip) {
		t.Errorf("allocation with the default range full: %s, %v, want one of 10.1.0.0/29", ip, err)
	}
	if err := r.Release(ctx, netip.MustParseAddr("10.1.0.3"), owner(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, serviceIPsPrefix+"10.1.0.3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("10.1.0.3 still held after its release: %v", err)
	}
}

// A range of 16 values or fewer has no band kept for requests, as in kube's allocators: a
// /28 hands out its 14 addresses and nothing beyond them (the band of 16 made it hand out
// its broadcast address and the next network's), a 10-port range its 10 ports.
func TestSmallRangesStayInside(t *testing.T) {
	ctx := context.Background()
	st := storetest.Bolt(t)
	r := mustRange(t, st, "10.0.0.0/28")
	for n := 0; n < 14; n++ {
		if ip, err := r.AllocateNext(ctx, owner(n)); err != nil || !r.CIDR().Contains(ip) || ip == netip.MustParseAddr("10.0.0.15") {
			t.Fatalf("allocation %d from 10.0.0.0/28: %s, %v", n, ip, err)
		}
	}
	if ip, err := r.AllocateNext(ctx, owner(99)); !errors.Is(err, ErrFull) {
		t.Errorf("allocation from a full /28: %s, %v, want %v", ip, err, ErrFull)
	}
	ports, err := NewPortRange(st, PortSpan{Base: 30000, Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 10; n++ {
		if p, err := ports.AllocateNext(ctx, owner(n)); err != nil || p < 30000 || p >= 30010 {
			t.Fatalf("port %d from 30000-30009: %d, %v", n, p, err)
		}
	}
}
