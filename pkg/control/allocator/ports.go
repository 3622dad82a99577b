package allocator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ErrPortAllocated: the requested node port is held by another Service.
var ErrPortAllocated = errors.New("provided port is already allocated")

// nodePortsPrefix holds one key per node port in use, named by the port number.
const nodePortsPrefix = "/registry/ranges/servicenodeports/"

// DefaultNodePorts is Kubernetes' default --service-node-port-range.
var DefaultNodePorts = PortSpan{Base: 30000, Size: 2768}

// PortSpan is a range of ports: Base to Base+Size-1.
type PortSpan struct{ Base, Size int }

func (s PortSpan) String() string { return fmt.Sprintf("%d-%d", s.Base, s.Base+s.Size-1) }

// PortRange is the node port range.
type PortRange struct {
	space
	span PortSpan
	// dryHeld are the ports a dry run has answered so far (a dry range serves one request).
	dryHeld []int
}

// dryRunGuess is the port before the first kube-apiserver answers a dry run that leaves
// node ports to it: it guesses rather than look for free ones, whatever the range.
const dryRunGuess = 32768

// NewPortRange returns the node port range span, held in st.
func NewPortRange(st store.Interface, span PortSpan) (*PortRange, error) {
	if span.Size < 1 || span.Base < 1 || span.Base+span.Size-1 > 65535 {
		return nil, fmt.Errorf("node port range %s is not within 1-65535", span)
	}
	size := uint64(span.Size)
	return &PortRange{span: span, space: space{store: st, prefix: nodePortsPrefix, size: size,
		static: staticBand(size, 16, 32, 128),
		name:   func(i uint64) string { return strconv.Itoa(span.Base + int(i)) },
		hold:   holdReference, owns: referenceOwns}}, nil
}

// PortNotInRangeError: a requested node port is outside the range.
type PortNotInRangeError struct{ Span PortSpan }

func (e *PortNotInRangeError) Error() string {
	return "provided port is not in the valid range. The range of valid ports is " + e.Span.String()
}

// Allocate holds port for owner: ErrPortAllocated if another Service holds it, a
// *PortNotInRangeError if it is outside the range.
func (r *PortRange) Allocate(ctx context.Context, port int, owner *corev1.ObjectReference) error {
	i, ok := r.offset(port)
	if r.dry {
		return r.dryAllocate(ctx, port, i, ok)
	}
	if !ok {
		return &PortNotInRangeError{Span: r.span}
	}
	return r.claim(ctx, i, owner, ErrPortAllocated)
}

// dryAllocate answers a dry run as kube's: a port is refused only when held already, by
// a Service or earlier in the request; one out of the range is held by none, so taken.
func (r *PortRange) dryAllocate(ctx context.Context, port int, i uint64, inRange bool) error {
	if slices.Contains(r.dryHeld, port) {
		return ErrPortAllocated
	}
	if inRange {
		if err := r.claim(ctx, i, nil, ErrPortAllocated); err != nil {
			return err
		}
	}
	r.dryHeld = append(r.dryHeld, port)
	return nil
}

// AllocateNext holds a free port for owner.
func (r *PortRange) AllocateNext(ctx context.Context, owner *corev1.ObjectReference) (int, error) {
	if r.dry { // as kube's dry run: one past the highest port answered so far, or its guess
		port := dryRunGuess
		if len(r.dryHeld) > 0 {
			port = slices.Max(r.dryHeld)
		}
		r.dryHeld = append(r.dryHeld, port+1)
		return port + 1, nil
	}
	i, err := r.claimNext(ctx, owner)
	if err != nil {
		return 0, err
	}
	return r.span.Base + int(i), nil
}

// Release gives port back unless a Service other than uid holds it.
func (r *PortRange) Release(ctx context.Context, port int, uid types.UID) error {
	i, ok := r.offset(port)
	if !ok {
		return nil
	}
	var owner *corev1.ObjectReference
	if uid != "" {
		owner = &corev1.ObjectReference{UID: uid}
	}
	return r.release(ctx, i, owner)
}

func (r *PortRange) offset(port int) (uint64, bool) {
	if port < r.span.Base || port >= r.span.Base+r.span.Size {
		return 0, false
	}
	return uint64(port - r.span.Base), true
}

func (r *PortRange) dryRun() *PortRange {
	dry := *r
	dry.dry = true
	return &dry
}
