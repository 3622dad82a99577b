package core

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/minik8s/minik8s/pkg/control/allocator"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Service holds its cluster IP and node ports (and health check node port) in the
// cluster-wide ranges from the moment it is stored until it is deleted or stops using them.

// serviceHolds are the values a Service holds in the ranges.
type serviceHolds struct {
	ips   map[netip.Addr]bool
	ports map[int]bool
}

func holdsOf(svc *corev1.Service) serviceHolds {
	h := serviceHolds{ips: map[netip.Addr]bool{}, ports: map[int]bool{}}
	if svc == nil {
		return h
	}
	if needsClusterIP(svc) && !isHeadless(svc) {
		for _, s := range svc.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(s); err == nil {
				h.ips[ip] = true
			}
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			h.ports[int(p.NodePort)] = true
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		h.ports[int(svc.Spec.HealthCheckNodePort)] = true
	}
	return h
}

// serviceOwner is the record a Service's values are held under.
func serviceOwner(svc *corev1.Service) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID}
}

// serviceClaim is one Claim: what the Service held before (old) and what this claim took.
type serviceClaim struct {
	ranges  allocator.Ranges
	svc     *corev1.Service
	old     *corev1.Service // nil on create
	owner   *corev1.ObjectReference
	held    serviceHolds
	claimed serviceHolds
}

func claimService(ctx context.Context, ranges allocator.Ranges, obj, old runtime.Object) (func() error, error) {
	svc := obj.(*corev1.Service)
	var prev *corev1.Service
	if old != nil {
		prev = old.(*corev1.Service)
	}
	if prev == nil {
		normalizeClusterIPs(svc, nil) // an update's are in prepareServiceUpdate
	}
	c := &serviceClaim{ranges: ranges, svc: svc, old: prev, owner: serviceOwner(svc), held: holdsOf(prev), claimed: holdsOf(nil)}
	undo := func() error { return c.release(context.WithoutCancel(ctx)) }
	if err := c.claim(ctx); err != nil {
		if uerr := undo(); uerr != nil {
			return nil, fmt.Errorf("%w (and giving back what was taken: %v)", err, uerr)
		}
		return nil, err
	}
	return undo, nil
}

// releaseService gives back what old held and svc (nil when deleted) does not.
func releaseService(ctx context.Context, ranges allocator.Ranges, obj, old runtime.Object) error {
	prev := old.(*corev1.Service)
	var svc *corev1.Service
	if obj != nil {
		svc = obj.(*corev1.Service)
	}
	keep := holdsOf(svc)
	var errs []error
	for ip := range holdsOf(prev).ips {
		if !keep.ips[ip] {
			errs = append(errs, ranges.ServiceIPs.Release(ctx, ip, serviceOwner(prev)))
		}
	}
	for port := range holdsOf(prev).ports {
		if !keep.ports[port] {
			errs = append(errs, ranges.NodePorts.Release(ctx, port, prev.UID))
		}
	}
	return errors.Join(errs...)
}

func (c *serviceClaim) claim(ctx context.Context) error {
	s, spec := &c.svc.Spec, field.NewPath("spec")
	if needsClusterIP(c.svc) {
		if errs := c.initIPFamilies(spec); len(errs) > 0 {
			return c.invalid(errs)
		}
		if !isHeadless(c.svc) {
			if err := c.claimClusterIP(ctx, spec.Child("clusterIPs")); err != nil {
				return err
			}
		}
	}
	switch {
	case !needsNodePorts(c.svc):
	case c.old == nil:
		if err := c.claimNodePorts(ctx, spec.Child("ports")); err != nil {
			return err
		}
	default:
		if err := c.updateNodePorts(ctx, spec.Child("ports")); err != nil {
			return err
		}
	}
	// A Service that needed a health check node port claims none on update, as kube's
	// allocator: a changed one is refused by validation (the field is immutable).
	if needsHealthCheckPort(c.svc) && (c.old == nil || !needsHealthCheckPort(c.old)) {
		// kube answers a health check node port it cannot hold with a 500, in these words.
		n, err := c.holdPort(ctx, int(s.HealthCheckNodePort))
		switch {
		case err != nil && s.HealthCheckNodePort != 0:
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %d: %w", s.HealthCheckNodePort, err))
		case err != nil:
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a HealthCheck NodePort 0: %w", err))
		}
		s.HealthCheckNodePort = int32(n)
	}
	return nil
}

// claimNodePorts holds each port's node port as kube's initNodePorts does: ports with
// the same number (say 53/TCP and 53/UDP) share one, the one the first of them asking
// for one names; any other node port asked for twice is refused the second time.
func (c *serviceClaim) claimNodePorts(ctx context.Context, path *field.Path) error {
	s := &c.svc.Spec
	requested := map[int32]int32{}
	for _, p := range s.Ports {
		if _, ok := requested[p.Port]; !ok && p.NodePort != 0 {
			requested[p.Port] = p.NodePort
		}
	}
	allocate := allocatesNodePorts(c.svc)
	shared := map[int32]int32{} // the node port each port number holds
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.NodePort == 0 && !allocate {
			continue
		}
		if n, ok := shared[p.Port]; ok && (p.NodePort == 0 || p.NodePort == n) {
			p.NodePort = n
			continue
		}
		if p.NodePort == 0 {
			p.NodePort = requested[p.Port]
		}
		n, err := c.claimPort(ctx, int(p.NodePort), path.Index(i).Child("nodePort"))
		if err != nil {
			return err
		}
		p.NodePort = int32(n)
		if _, ok := shared[p.Port]; !ok {
			shared[p.Port] = p.NodePort
		}
	}
	return nil
}

// allocatesNodePorts: a port of svc without a node port gets one (kube's
// shouldAllocateNodePorts): always for NodePort, for LoadBalancer unless turned off.
func allocatesNodePorts(svc *corev1.Service) bool {
	s := &svc.Spec
	return s.Type == corev1.ServiceTypeNodePort || s.AllocateLoadBalancerNodePorts == nil || *s.AllocateLoadBalancerNodePorts
}

// updateNodePorts holds each port's node port on update as kube's updateNodePorts does,
// which differs from a create's: a port asking for none gets a free one of its own, a
// node port held before or taken by an earlier port of this update is not claimed again
// (so ports of different protocols may share one), and the same protocol and node port
// twice is kube's 500.
func (c *serviceClaim) updateNodePorts(ctx context.Context, path *field.Path) error {
	s := &c.svc.Spec
	allocate := allocatesNodePorts(c.svc)
	type protocolPort struct {
		Protocol corev1.Protocol
		NodePort int32
	}
	seen := map[protocolPort]bool{}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.NodePort == 0 && !allocate {
			continue
		}
		if p.NodePort == 0 || !c.claimed.ports[int(p.NodePort)] {
			n, err := c.claimPort(ctx, int(p.NodePort), path.Index(i).Child("nodePort"))
			if err != nil {
				return err
			}
			p.NodePort = int32(n)
		}
		pp := protocolPort{p.Protocol, p.NodePort}
		if seen[pp] {
			return responsewriters.UnknownError(fmt.Errorf("duplicate nodePort: %v", pp))
		}
		seen[pp] = true
	}
	return nil
}

// initIPFamilies fills ipFamilyPolicy and ipFamilies from the cluster's range, as
// Kubernetes does when it allocates, after checking the fields that name IPs and families
// against each other (the claim comes before validation, as kube's does), and refuses
// families the cluster does not have.
func (c *serviceClaim) initIPFamilies(spec *field.Path) field.ErrorList {
	s := &c.svc.Spec
	primary := c.ranges.ServiceIPs.Family()
	if s.IPFamilyPolicy == nil {
		policy := corev1.IPFamilyPolicySingleStack
		if isHeadless(c.svc) && len(s.Selector) == 0 {
			policy = corev1.IPFamilyPolicyRequireDualStack // headless and selectorless: any family
		}
		s.IPFamilyPolicy = &policy
	}
	if errs := validateClusterIPFields(c.svc, c.old); len(errs) > 0 {
		return errs
	}
	errs := singleStackPolicyErrors(c.svc) // reported with the families below, as kube does
	for i, ip := range s.ClusterIPs {
		if ip == corev1.ClusterIPNone || ip == "" {
			break
		}
		switch f := familyOf(ip); {
		case i < len(s.IPFamilies): // given; checked below
		case f != primary:
			errs = append(errs, field.Invalid(spec.Child("clusterIPs").Index(i), s.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", f)))
		default:
			s.IPFamilies = append(s.IPFamilies, f)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if len(s.IPFamilies) == 0 {
		s.IPFamilies = []corev1.IPFamily{primary}
	}
	if isHeadless(c.svc) && len(s.Selector) == 0 {
		if len(s.IPFamilies) == 1 && *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			s.IPFamilies = append(s.IPFamilies, otherFamily(s.IPFamilies[0]))
		}
		return nil
	}
	if *s.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(spec.Child("ipFamilyPolicy"), *s.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, f := range s.IPFamilies {
		if f != primary {
			errs = append(errs, field.Invalid(spec.Child("ipFamilies").Index(i), f, "not configured on this cluster"))
		}
	}
	return errs
}

func otherFamily(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// claimClusterIP holds the requested cluster IP, or a free one when none is requested, for
// a Service created or one that had none (an ExternalName one).
func (c *serviceClaim) claimClusterIP(ctx context.Context, path *field.Path) error {
	s := &c.svc.Spec
	if c.old != nil && needsClusterIP(c.old) {
		// As kube's allocator: a Service that had a cluster IP claims none on update; a
		// changed one is refused by validation (the field is immutable).
		return nil
	}
	if len(s.ClusterIPs) == 0 || s.ClusterIPs[0] == "" {
		ip, err := c.ranges.ServiceIPs.AllocateNext(ctx, c.owner)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
		}
		c.claimed.ips[ip] = true
		s.ClusterIPs = append([]string{ip.String()}, s.ClusterIPs[min(1, len(s.ClusterIPs)):]...)
		s.ClusterIP = s.ClusterIPs[0]
		return nil
	}
	ip, err := netip.ParseAddr(s.ClusterIPs[0])
	if err != nil {
		return nil // initIPFamilies refused a malformed IP
	}
	err = c.ranges.ServiceIPs.Allocate(ctx, ip, c.owner)
	var notInRange *allocator.IPNotInRangeError
	switch {
	case errors.Is(err, allocator.ErrIPAllocated) || errors.Is(err, allocator.ErrMismatchedNetwork) || errors.As(err, &notInRange):
		return c.invalid(field.ErrorList{field.Invalid(path, s.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %v", ip, err))})
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	c.claimed.ips[ip] = true
	return nil
}

// holdPort holds port (0: a free one) and returns it, or the allocator's error.
func (c *serviceClaim) holdPort(ctx context.Context, port int) (int, error) {
	if port == 0 {
		n, err := c.ranges.NodePorts.AllocateNext(ctx, c.owner)
		if err != nil {
			return 0, err
		}
		c.claimed.ports[n] = true
		return n, nil
	}
	if c.held.ports[port] {
		return port, nil
	}
	if err := c.ranges.NodePorts.Allocate(ctx, port, c.owner); err != nil {
		return 0, err
	}
	c.claimed.ports[port] = true
	return port, nil
}

// claimPort holds a Service port's node port (0: a free one) and returns it; one taken or
// out of range is refused at path, in kube's words.
func (c *serviceClaim) claimPort(ctx context.Context, port int, path *field.Path) (int, error) {
	n, err := c.holdPort(ctx, port)
	var notInRange *allocator.PortNotInRangeError
	switch {
	case err == nil:
		return n, nil
	case port == 0:
		return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
	case errors.Is(err, allocator.ErrPortAllocated) || errors.As(err, &notInRange):
		return 0, c.invalid(field.ErrorList{field.Invalid(path, port, err.Error())})
	}
	return 0, apierrors.NewInternalError(err)
}

// release gives back what this claim took.
func (c *serviceClaim) release(ctx context.Context) error {
	var errs []error
	for ip := range c.claimed.ips {
		errs = append(errs, c.ranges.ServiceIPs.Release(ctx, ip, c.owner))
	}
	for port := range c.claimed.ports {
		errs = append(errs, c.ranges.NodePorts.Release(ctx, port, c.owner.UID))
	}
	return errors.Join(errs...)
}

func (c *serviceClaim) invalid(errs field.ErrorList) error {
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), c.svc.Name, errs)
}
