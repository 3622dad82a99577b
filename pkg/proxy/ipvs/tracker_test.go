package ipvs

import (
	"fmt"
	"maps"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/proxy"
	"github.com/minik8s/minik8s/pkg/proxy/ipset"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// TestTrackerMatchesFullRecompute: after each change the tracker's state equals a full
// recompute, and the changes it notes, applied to the previous state as a partial sync
// does, give that state too — whether the tracker compared every port (update, a full
// sync) or was given the changed Services (change, a partial sync).
func TestTrackerMatchesFullRecompute(t *testing.T) {
	nodeIPs := []net.IP{net.ParseIP("10.200.0.11")}
	base := ports()
	moved := ports()
	moved[0].Endpoints = []proxy.Endpoint{{IP: "10.244.1.2", Port: 8080, Ready: true, Serving: true, Local: true},
		{IP: "10.244.2.9", Port: 8080, Ready: true, Serving: true}}
	// Another Service on web's external IP and port, and on its hairpin endpoint.
	twin := proxy.ServicePort{Name: "default/zz:http", Protocol: corev1.ProtocolTCP, ClusterIP: "10.96.0.11", Port: 80,
		ExternalIPs: []string{"192.0.2.7"}, Endpoints: []proxy.Endpoint{{IP: "10.244.1.2", Port: 8080, Ready: true, Local: true}}}
	affinity := append(moved[:1:1], moved[1])
	affinity[1].AffinitySeconds = 30
	steps := []struct {
		name  string
		ports []proxy.ServicePort
		want  int // service ports recomputed
	}{
		{"first", base, 2},
		{"unchanged", base, 0},
		{"endpoint moved", moved, 1},
		{"twin added", append(append([]proxy.ServicePort{}, moved...), twin), 1},
		{"web removed", []proxy.ServicePort{moved[1], twin}, 1},
		{"affinity changed", []proxy.ServicePort{affinity[1], twin}, 1},
		{"all removed", nil, 2},
	}
	for _, partial := range []bool{false, true} {
		tr := newTracker(Config{}, nodeIPs)
		kernel := &state{services: map[vsKey]*virtualServer{}, addrs: map[string]bool{}, sets: ipset.KubeSets()}
		var prev []proxy.ServicePort
		for _, s := range steps {
			name := fmt.Sprintf("%s (partial %v)", s.name, partial)
			var got int
			if partial {
				got = tr.change(changesOf(prev, s.ports), nodeIPs)
			} else {
				got = tr.update(s.ports, nodeIPs)
			}
			prev = s.ports
			if got != s.want {
				t.Errorf("%s: %d service ports recomputed, want %d", name, got, s.want)
			}
			full := desiredState(Config{}, s.ports, nodeIPs)
			if d := diffState(tr.st, full); d != "" {
				t.Errorf("%s: tracked state differs from a full recompute: %s", name, d)
			}
			writeChanges(t, tr, kernel)
			if d := diffState(kernel, full); d != "" {
				t.Errorf("%s: the noted changes applied to the previous state differ from a full recompute: %s", name, d)
			}
			tr.markApplied()
		}
	}
	if w := desiredState(Config{}, []proxy.ServicePort{moved[0], twin}, nodeIPs).services[vsKey{Proto: unix.IPPROTO_TCP, IP: "192.0.2.7", Port: 80}]; w == nil || w.Service != "default/zz:http" {
		t.Errorf("colliding virtual server kept by %v, want default/zz:http's", w)
	}
}

// diffState names what differs between two wanted states.
func diffState(a, b *state) string {
	var out []string
	if len(a.services) != len(b.services) {
		out = append(out, "virtual server count")
	}
	for key, x := range a.services {
		y := b.services[key]
		if y == nil || x.Scheduler != y.Scheduler || x.Persistent != y.Persistent || x.Service != y.Service || !maps.Equal(x.Dests, y.Dests) {
			out = append(out, "virtual server "+key.String())
		}
	}
	if !maps.Equal(a.addrs, b.addrs) {
		out = append(out, "addresses")
	}
	for name, s := range b.sets {
		if !maps.Equal(a.sets[name].Entries, s.Entries) {
			out = append(out, "set "+name)
		}
	}
	return strings.Join(out, ", ")
}

// changesOf are the changes from one list of service ports to the next, per Service, as
// the Snapshotter gives them; every Service of either list is named, changed or not.
func changesOf(before, after []proxy.ServicePort) []proxy.Change {
	bySvc := map[string]*proxy.Change{}
	var order []string
	get := func(sp proxy.ServicePort) *proxy.Change {
		svc, _, _ := strings.Cut(sp.Name, ":")
		if bySvc[svc] == nil {
			bySvc[svc] = &proxy.Change{}
			order = append(order, svc)
		}
		return bySvc[svc]
	}
	for _, sp := range before {
		c := get(sp)
		c.Before = append(c.Before, sp)
	}
	for _, sp := range after {
		c := get(sp)
		c.After = append(c.After, sp)
	}
	var out []proxy.Change
	for _, svc := range order {
		out = append(out, *bySvc[svc])
	}
	return out
}

// writeChanges applies the tracker's noted changes to a model of the kernel, as a partial
// sync writes them.
func writeChanges(t *testing.T, tr *tracker, kernel *state) {
	t.Helper()
	for k := range tr.dirtyVS {
		if w := tr.st.services[k]; w != nil {
			kernel.services[k] = w
		} else {
			delete(kernel.services, k)
		}
	}
	for ip := range tr.dirtyAddrs {
		if tr.st.addrs[ip] {
			kernel.addrs[ip] = true
		} else {
			delete(kernel.addrs, ip)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(tr.setChanges()), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 4 || f[3] != "-exist" {
			t.Fatalf("ipset line %q", line)
		}
		if f[0] == "add" {
			kernel.sets[f[1]].Add(f[2])
		} else {
			delete(kernel.sets[f[1]].Entries, f[2])
		}
	}
}

// samePort compares every field of a service port: one it left out would keep a changed
// port's old share of the state (a new health check node port, say) until a full sync.
func TestSamePortComparesEveryField(t *testing.T) {
	a := ports()[0]
	for i := range reflect.TypeFor[proxy.ServicePort]().NumField() {
		b := a
		f := reflect.ValueOf(&b).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Int32:
			f.SetInt(f.Int() + 1)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.New(f.Type().Elem()).Elem()))
		default:
			t.Fatalf("field %s: kind %s not handled by this test", reflect.TypeFor[proxy.ServicePort]().Field(i).Name, f.Kind())
		}
		if samePort(&a, &b) {
			t.Errorf("samePort ignores a change of %s", reflect.TypeFor[proxy.ServicePort]().Field(i).Name)
		}
	}
}
