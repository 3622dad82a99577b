package ipvs

import (
	"net"
	"strconv"
	"testing"

	libipvs "github.com/moby/ipvs"
	"golang.org/x/sys/unix"
)

// fakeIPVS keeps virtual servers and real servers (with connection counts) in memory.
type fakeIPVS struct {
	dests map[vsKey]map[string]*libipvs.Destination
}

func keyOf(s *libipvs.Service) vsKey {
	return vsKey{Proto: s.Protocol, IP: s.Address.String(), Port: s.Port}
}
func hostPort(d *libipvs.Destination) string {
	return net.JoinHostPort(d.Address.String(), strconv.Itoa(int(d.Port)))
}

func (f *fakeIPVS) GetServices() ([]*libipvs.Service, error) { return nil, nil }
func (f *fakeIPVS) NewService(s *libipvs.Service) error {
	f.dests[keyOf(s)] = map[string]*libipvs.Destination{}
	return nil
}
func (f *fakeIPVS) UpdateService(*libipvs.Service) error { return nil }
func (f *fakeIPVS) DelService(s *libipvs.Service) error {
	delete(f.dests, keyOf(s))
	return nil
}
func (f *fakeIPVS) GetDestinations(s *libipvs.Service) ([]*libipvs.Destination, error) {
	var out []*libipvs.Destination
	for _, d := range f.dests[keyOf(s)] {
		out = append(out, d)
	}
	return out, nil
}
func (f *fakeIPVS) NewDestination(s *libipvs.Service, d *libipvs.Destination) error {
	f.dests[keyOf(s)][hostPort(d)] = d
	return nil
}
func (f *fakeIPVS) UpdateDestination(s *libipvs.Service, d *libipvs.Destination) error {
	f.dests[keyOf(s)][hostPort(d)].Weight = d.Weight
	return nil
}
func (f *fakeIPVS) DelDestination(s *libipvs.Service, d *libipvs.Destination) error {
	delete(f.dests[keyOf(s)], hostPort(d))
	return nil
}
func (f *fakeIPVS) SetConfig(*libipvs.Config) error { return nil }
func (f *fakeIPVS) Close()                          {}

// TestGracefulTermination: a removed TCP real server with connections is drained at weight
// 0 and deleted by the first sync after its connections are gone, even one where its
// Service did not change; one without connections, or of a UDP service, goes at once; one
// wanted again while draining gets its weight back.
func TestGracefulTermination(t *testing.T) {
	f := &fakeIPVS{dests: map[vsKey]map[string]*libipvs.Destination{}}
	p := &Proxier{ipvs: f, applied: map[vsKey]*virtualServer{}, draining: map[vsKey]bool{}}
	tcp := vsKey{Proto: unix.IPPROTO_TCP, IP: "10.96.0.10", Port: 80}
	udp := vsKey{Proto: unix.IPPROTO_UDP, IP: "10.96.0.53", Port: 53}
	want := func(dests ...string) map[vsKey]*virtualServer {
		d := map[string]int{}
		for _, x := range dests {
			d[x] = 1
		}
		return map[vsKey]*virtualServer{
			tcp: {Key: tcp, Scheduler: "rr", Dests: d},
			udp: {Key: udp, Scheduler: "rr", Dests: d},
		}
	}
	sync := func(w map[vsKey]*virtualServer, changed ...vsKey) int {
		t.Helper()
		c := map[vsKey]bool{}
		for _, k := range changed {
			c[k] = true
		}
		calls, err := p.syncIPVS(w, false, c)
		if err != nil {
			t.Fatal(err)
		}
		return calls
	}
	weight := func(k vsKey, d string) int {
		if x, ok := f.dests[k][d]; ok {
			return x.Weight
		}
		return -1 // absent
	}
	a, b, c := "10.244.1.2:8080", "10.244.2.2:8080", "10.244.3.2:8080"

	sync(want(a, b, c), tcp, udp)
	f.dests[tcp][b].ActiveConnections, f.dests[tcp][c].InactiveConnections = 1, 2
	f.dests[udp][b].ActiveConnections = 1
	w := want(a)
	if calls := sync(w, tcp, udp); calls != 4 {
		t.Errorf("removing b and c: %d IPVS calls, want 4 (two to weight 0, two UDP deletes)", calls)
	}
	if weight(tcp, b) != 0 || weight(tcp, c) != 0 || weight(tcp, a) != 1 {
		t.Errorf("TCP real servers with connections: weights a=%d b=%d c=%d, want 1 0 0", weight(tcp, a), weight(tcp, b), weight(tcp, c))
	}
	if weight(udp, b) != -1 || weight(udp, c) != -1 {
		t.Error("UDP real servers not deleted at once")
	}
	if calls := sync(w); calls != 0 || weight(tcp, b) != 0 {
		t.Errorf("still connected: %d calls, weight %d; want 0 calls, weight 0", calls, weight(tcp, b))
	}
	// b's connections end: the next sync deletes it although nothing changed.
	f.dests[tcp][b].ActiveConnections = 0
	if calls := sync(w); calls != 1 || weight(tcp, b) != -1 || weight(tcp, c) != 0 || !p.draining[tcp] {
		t.Errorf("b drained: %d calls, b %d, c %d, draining %v; want 1 call, b deleted, c still at 0", calls, weight(tcp, b), weight(tcp, c), p.draining[tcp])
	}
	// c is wanted again while draining: weight back, nothing left to drain.
	sync(want(a, c), tcp, udp)
	if weight(tcp, c) != 1 || p.draining[tcp] {
		t.Errorf("c wanted again: weight %d, draining %v; want 1, false", weight(tcp, c), p.draining[tcp])
	}
	// The whole virtual server goes: nothing left to drain either.
	p.draining[tcp] = true
	sync(map[vsKey]*virtualServer{}, tcp, udp)
	if len(f.dests) != 0 || len(p.draining) != 0 {
		t.Errorf("after removing both virtual servers: IPVS %v, draining %v", f.dests, p.draining)
	}
}
