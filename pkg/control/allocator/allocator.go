// Package allocator hands out values that must be unique across the cluster — Service
// cluster IPs and node ports — from a range. Each value held is one store key, created with
// store.Create, which refuses a key that exists: two requests (or two API servers on one
// etcd) can never hold the same value, and what is held survives a restart with the store.
package allocator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
)

// ErrFull: every value of the range is held.
var ErrFull = errors.New("range is full")

// errTaken: a value claimNext tried was taken meanwhile; it tries the next.
var errTaken = errors.New("taken")

// maxReleaseAttempts bounds the get-and-delete retries of one release under write races.
const maxReleaseAttempts = 8

// space is a range of size values; value number i is held while the key prefix+name(i) exists.
// The first static values are a band left to explicit requests: dynamic allocation takes
// them only when the rest is full (KEP-3070), so a Service asking for a fixed IP or port
// rarely finds it taken.
type space struct {
	store  store.Interface
	prefix string
	size   uint64
	static uint64
	name   func(i uint64) string
	// hold is what the key of value i stores for owner; owns tells whether a stored value
	// is owner's.
	hold func(i uint64, owner *corev1.ObjectReference) ([]byte, error)
	owns func(value []byte, owner *corev1.ObjectReference) (bool, error)
	// dry checks without writing, for dryRun requests.
	dry bool
}

// holdReference stores the owner's reference, as node ports are held.
func holdReference(_ uint64, owner *corev1.ObjectReference) ([]byte, error) {
	return json.Marshal(owner)
}

// referenceOwns: the stored reference has owner's UID.
func referenceOwns(value []byte, owner *corev1.ObjectReference) (bool, error) {
	var holder corev1.ObjectReference
	if err := json.Unmarshal(value, &holder); err != nil {
		return false, err
	}
	return holder.UID == owner.UID, nil
}

// staticBand is Kubernetes' size of the band reserved for explicit requests:
// min(max(low, size/step), high), and none in a range of no more than low values.
func staticBand(size, low, step, high uint64) uint64 {
	if size <= low {
		return 0
	}
	return min(max(low, size/step), high)
}

// claim takes value i for owner; errAllocated when it is held already.
func (s *space) claim(ctx context.Context, i uint64, owner *corev1.ObjectReference, errAllocated error) error {
	key := s.prefix + s.name(i)
	if s.dry {
		_, err := s.store.Get(ctx, key)
		switch {
		case err == nil:
			return errAllocated
		case errors.Is(err, store.ErrNotFound):
			return nil
		}
		return fmt.Errorf("read %s: %w", key, err)
	}
	value, err := s.hold(i, owner)
	if err != nil {
		return err
	}
	_, err = s.store.Create(ctx, key, value)
	if errors.Is(err, store.ErrExists) {
		return errAllocated
	}
	if err != nil {
		return fmt.Errorf("hold %s: %w", key, err)
	}
	return nil
}

// claimNext takes a free value for owner (claimFree).
func (s *space) claimNext(ctx context.Context, owner *corev1.ObjectReference) (uint64, error) {
	held, err := s.held(ctx)
	if err != nil {
		return 0, err
	}
	return s.claimFree(ctx, owner, held)
}

// held names the values held under the space's prefix.
func (s *space) held(ctx context.Context) (map[string]bool, error) {
	kvs, _, err := s.store.List(ctx, s.prefix)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.prefix, err)
	}
	held := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		held[kv.Key[len(s.prefix):]] = true
	}
	return held, nil
}

// claimFree takes a value not in held for owner: from a random point of the dynamic band
// onwards, then the static band. Values taken by others since held was listed are
// skipped, since their keys exist by then.
func (s *space) claimFree(ctx context.Context, owner *corev1.ObjectReference, held map[string]bool) (uint64, error) {
	try := func(from, to uint64) (uint64, bool, error) {
		if from >= to {
			return 0, false, nil
		}
		start := from + rand.Uint64N(to-from)
		for n := uint64(0); n < to-from; n++ {
			i := from + (start-from+n)%(to-from)
			if held[s.name(i)] {
				continue
			}
			err := s.claim(ctx, i, owner, errTaken)
			if errors.Is(err, errTaken) {
				continue
			}
			return i, err == nil, err
		}
		return 0, false, nil
	}
	for _, band := range [][2]uint64{{s.static, s.size}, {0, s.static}} {
		i, ok, err := try(band[0], band[1])
		if err != nil || ok {
			return i, err
		}
	}
	return 0, ErrFull
}

// release gives value i back, unless another than owner (nil: anyone) holds it now.
func (s *space) release(ctx context.Context, i uint64, owner *corev1.ObjectReference) error {
	return s.releaseName(ctx, s.name(i), owner)
}

// releaseName is release of the value named name.
func (s *space) releaseName(ctx context.Context, name string, owner *corev1.ObjectReference) error {
	if s.dry {
		return nil
	}
	key := s.prefix + name
	for attempt := 0; attempt < maxReleaseAttempts; attempt++ {
		kv, err := s.store.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
		if owner != nil {
			owns, err := s.owns(kv.Value, owner)
			if err != nil {
				return fmt.Errorf("%s holds a corrupt owner: %w", key, err)
			}
			if !owns {
				return nil
			}
		}
		_, _, err = s.store.Delete(ctx, key, kv.Revision)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("release %s: %w", key, err)
		}
		return nil
	}
	return fmt.Errorf("release %s: too many concurrent writers", key)
}

// Ranges are the cluster-wide ranges objects draw unique values from.
type Ranges struct {
	ServiceIPs *IPRange
	NodePorts  *PortRange
}

// DefaultServiceRange is Kubernetes' default --service-cluster-ip-range.
var DefaultServiceRange = netip.MustParsePrefix(clusterdefaults.ServiceCIDR)

// NewRanges returns the cluster IP range serviceCIDR and the node port range nodePorts,
// held in st.
func NewRanges(st store.Interface, serviceCIDR netip.Prefix, nodePorts PortSpan) (Ranges, error) {
	ips, err := NewIPRange(st, serviceCIDR)
	if err != nil {
		return Ranges{}, err
	}
	ports, err := NewPortRange(st, nodePorts)
	if err != nil {
		return Ranges{}, err
	}
	return Ranges{ServiceIPs: ips, NodePorts: ports}, nil
}

// DryRun returns ranges that check requests without holding anything, for dryRun writes.
func (r Ranges) DryRun() Ranges {
	return Ranges{ServiceIPs: r.ServiceIPs.dryRun(), NodePorts: r.NodePorts.dryRun()}
}
