package allocator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// ErrIPAllocated: the requested cluster IP is held by another Service.
var ErrIPAllocated = errors.New("provided IP is already allocated")

// ErrMismatchedNetwork: the requested cluster IP is in no service range (or is its network
// or broadcast address), in the words of kube-apiserver's allocator of ServiceCIDRs.
var ErrMismatchedNetwork = errors.New("the provided network does not match the current range")

// serviceIPsPrefix holds one key per cluster IP in use, named by the IP: the
// networking.k8s.io/v1 IPAddress objects of the API (registry/generic's key of
// ipaddresses), as kube-apiserver's allocator holds cluster IPs.
const serviceIPsPrefix = "/registry/networking.k8s.io/ipaddresses/"

// ipAllocatorName is the managed-by label kube-apiserver's allocator puts on the
// IPAddresses it holds.
const ipAllocatorName = "ipallocator.k8s.io"

// maxRangeSize caps the size of huge (IPv6) ranges so offsets fit an int64.
const maxRangeSize = uint64(1) << 62

// IPRange is the Service cluster IP range (--service-cluster-ip-range). As in Kubernetes,
// the network address (and for IPv4 the broadcast address) is never handed out, and the
// first usable address is the `kubernetes` Service's.
type IPRange struct {
	space
	cidr netip.Prefix
	base netip.Addr // first usable address, offset 0
}

// NewIPRange returns the cluster IP range cidr, held in st.
func NewIPRange(st store.Interface, cidr netip.Prefix) (*IPRange, error) {
	cidr = cidr.Masked()
	hostBits := cidr.Addr().BitLen() - cidr.Bits()
	if !cidr.IsValid() {
		return nil, fmt.Errorf("service IP range %q is not a CIDR", cidr)
	}
	size := maxRangeSize
	if hostBits < 62 {
		total, reserved := uint64(1)<<hostBits, uint64(1) // the network address
		if cidr.Addr().Is4() {
			reserved++ // and the broadcast address
		}
		if total <= reserved {
			return nil, fmt.Errorf("service IP range %s has no usable address", cidr)
		}
		size = total - reserved
	}
	r := &IPRange{cidr: cidr, base: cidr.Addr().Next()}
	r.space = space{store: st, prefix: serviceIPsPrefix, size: size, static: staticBand(size, 16, 16, 256),
		name: func(i uint64) string { return r.addr(i).String() }, hold: r.ipAddress, owns: parentIs}
	return r, nil
}

// ipAddressFields are the managed fields of an IPAddress the allocator writes: kube-apiserver's
// allocator creates it through a client, so its field manager records the labels and the
// parent as the manager kube-apiserver's.
var ipAddressFields = []byte(`{"f:metadata":{"f:labels":{".":{},"f:ipaddress.kubernetes.io/ip-family":{},"f:ipaddress.kubernetes.io/managed-by":{}}},` +
	`"f:spec":{"f:parentRef":{".":{},"f:name":{},"f:namespace":{},"f:resource":{}}}}`)

// ipAddress is the stored IPAddress object holding value i for a Service.
func (r *IPRange) ipAddress(i uint64, owner *corev1.ObjectReference) ([]byte, error) {
	now := metav1.Now()
	return json.Marshal(&networkingv1.IPAddress{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "IPAddress"},
		ObjectMeta: metav1.ObjectMeta{Name: r.addr(i).String(), UID: uuid.NewUUID(), CreationTimestamp: now,
			Labels: map[string]string{networkingv1.LabelIPAddressFamily: string(r.Family()), networkingv1.LabelManagedBy: ipAllocatorName},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-apiserver", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: networkingv1.SchemeGroupVersion.String(), Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: ipAddressFields}}}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: owner.Namespace, Name: owner.Name}},
	})
}

// parentIs: the stored IPAddress is the Service owner's.
func parentIs(value []byte, owner *corev1.ObjectReference) (bool, error) {
	var ip networkingv1.IPAddress
	if err := json.Unmarshal(value, &ip); err != nil {
		return false, err
	}
	p := ip.Spec.ParentRef
	return p != nil && p.Group == "" && p.Resource == "services" && p.Namespace == owner.Namespace && p.Name == owner.Name, nil
}

// CIDR is the range.
func (r *IPRange) CIDR() netip.Prefix { return r.cidr }

// First is the first usable address, the `kubernetes` Service's.
func (r *IPRange) First() netip.Addr { return r.base }

// Family is the range's IP family.
func (r *IPRange) Family() corev1.IPFamily {
	if r.cidr.Addr().Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// Allocate holds ip for owner: ErrIPAllocated if another Service holds it,
// ErrMismatchedNetwork if it is in no usable range (or is a range's network or broadcast
// address).
func (r *IPRange) Allocate(ctx context.Context, ip netip.Addr, owner *corev1.ObjectReference) error {
	if _, ok := r.offset(ip); !ok {
		others, err := r.others(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(others, func(o *IPRange) bool { _, ok := o.offset(ip); return ok })
		switch {
		case i >= 0:
			return others[i].allocateIn(ctx, ip, owner)
		case r.dry:
			return &IPNotInRangeError{IP: ip, CIDR: r.cidr}
		}
		return ErrMismatchedNetwork
	}
	return r.allocateIn(ctx, ip, owner)
}

// allocateIn holds ip, which is in r.
func (r *IPRange) allocateIn(ctx context.Context, ip netip.Addr, owner *corev1.ObjectReference) error {
	if r.dry { // kube's dry run checks only the range
		return nil
	}
	i, _ := r.offset(ip)
	return r.claim(ctx, i, owner, ErrIPAllocated)
}

// serviceCIDRsPrefix holds the ServiceCIDR objects (registry/generic's key of servicecidrs).
const serviceCIDRsPrefix = "/registry/networking.k8s.io/servicecidrs/"

// others are the ranges of the ServiceCIDRs beside this one (the `kubernetes` ServiceCIDR,
// --service-cluster-ip-range) that cluster IPs may come from: those of its family marked
// Ready (by the servicecidrs controller) and not being deleted, as kube-apiserver's
// allocator of ServiceCIDRs serves them, read from the store at each call.
func (r *IPRange) others(ctx context.Context) ([]*IPRange, error) {
	kvs, _, err := r.store.List(ctx, serviceCIDRsPrefix)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", serviceCIDRsPrefix, err)
	}
	var out []*IPRange
	for _, kv := range kvs {
		var c networkingv1.ServiceCIDR
		if err := json.Unmarshal(kv.Value, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		if c.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(c.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
			continue
		}
		for _, s := range c.Spec.CIDRs {
			p, err := netip.ParsePrefix(s)
			if err != nil || p.Masked() == r.cidr || p.Addr().Is4() != r.cidr.Addr().Is4() {
				continue
			}
			if o, err := NewIPRange(r.store, p); err == nil {
				o.dry = r.dry
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// IPNotInRangeError is a dry run's answer to a cluster IP out of the range, in the words
// of kube-apiserver's allocator (a write's is ErrMismatchedNetwork, as kube's).
type IPNotInRangeError struct {
	IP   netip.Addr
	CIDR netip.Prefix
}

func (e *IPNotInRangeError) Error() string {
	return fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", e.IP, e.CIDR)
}

// AllocateNext holds a free IP for owner.
func (r *IPRange) AllocateNext(ctx context.Context, owner *corev1.ObjectReference) (netip.Addr, error) {
	if r.dry { // kube's dry run does not look for a free address: it shows the network's
		return r.cidr.Addr(), nil
	}
	held, err := r.held(ctx) // every range's IPAddresses: they share one prefix
	if err != nil {
		return netip.Addr{}, err
	}
	i, err := r.claimFree(ctx, owner, held)
	if !errors.Is(err, ErrFull) {
		return r.addr(i), err
	}
	// Full: the other ServiceCIDRs, in the order of their names.
	others, err := r.others(ctx)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, o := range others {
		i, err := o.claimFree(ctx, owner, held)
		if !errors.Is(err, ErrFull) {
			return o.addr(i), err
		}
	}
	return netip.Addr{}, ErrFull
}

// Release gives ip back unless another than the Service owner (nil: anyone) holds it,
// whichever range it came from (one since deleted too).
func (r *IPRange) Release(ctx context.Context, ip netip.Addr, owner *corev1.ObjectReference) error {
	return r.releaseName(ctx, ip.Unmap().String(), owner)
}

func (r *IPRange) addr(i uint64) netip.Addr {
	n := new(big.Int).SetBytes(r.base.AsSlice())
	n.Add(n, new(big.Int).SetUint64(i))
	buf := make([]byte, r.base.BitLen()/8)
	addr, _ := netip.AddrFromSlice(n.FillBytes(buf))
	return addr
}

func (r *IPRange) offset(ip netip.Addr) (uint64, bool) {
	ip = ip.Unmap()
	if !r.cidr.Contains(ip) || ip.Less(r.base) {
		return 0, false
	}
	d := new(big.Int).Sub(new(big.Int).SetBytes(ip.AsSlice()), new(big.Int).SetBytes(r.base.AsSlice()))
	if !d.IsUint64() || d.Uint64() >= r.size {
		return 0, false
	}
	return d.Uint64(), true
}

func (r *IPRange) dryRun() *IPRange {
	dry := *r
	dry.dry = true
	return &dry
}

// legacyServiceIPsPrefix is where cluster IPs were held (as owner references) before they
// were IPAddresses.
const legacyServiceIPsPrefix = "/registry/ranges/serviceips/"

// MigrateLegacy turns the cluster IPs a store holds the old way into IPAddresses, so a
// cluster started by an older miniapi keeps its Services' IPs held.
func (r *IPRange) MigrateLegacy(ctx context.Context) error {
	kvs, _, err := r.store.List(ctx, legacyServiceIPsPrefix)
	if err != nil {
		return fmt.Errorf("list %s: %w", legacyServiceIPsPrefix, err)
	}
	for _, kv := range kvs {
		var owner corev1.ObjectReference
		ip, perr := netip.ParseAddr(kv.Key[len(legacyServiceIPsPrefix):])
		if err := json.Unmarshal(kv.Value, &owner); err != nil || perr != nil {
			return fmt.Errorf("%s holds a corrupt owner: %v", kv.Key, errors.Join(err, perr))
		}
		if i, ok := r.offset(ip); ok {
			if err := r.claim(ctx, i, &owner, ErrIPAllocated); err != nil && !errors.Is(err, ErrIPAllocated) {
				return err
			}
		}
		if _, _, err := r.store.Delete(ctx, kv.Key, kv.Revision); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("delete %s: %w", kv.Key, err)
		}
	}
	return nil
}
