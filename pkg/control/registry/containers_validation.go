package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/internal/resourcename"
)

// The validation of a pod's init and regular containers, as kube's validateContainers
// and validateInitContainers (pkg/apis/core/validation).

// validatePodSpecContainers checks what a pod and a pod template both hold: at least one
// container, and the init and regular containers, whose names go into names (unique among
// them all).
func validatePodSpecContainers(spec *corev1.PodSpec, path *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "must have at least one container"))
	}
	errs = append(errs, validateContainers(spec.InitContainers, path.Child("initContainers"), names)...)
	return append(errs, validateContainers(spec.Containers, path.Child("containers"), names)...)
}

func validateContainers(cs []corev1.Container, path *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	for i := range cs {
		errs = append(errs, validateContainer(&cs[i], path.Index(i), names)...)
	}
	return errs
}

// validateContainer checks one container at p; names are the pod's containers' names so
// far, to which it adds c's.
func validateContainer(c *corev1.Container, p *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(p.Child("name"), ""))
	case names.Has(c.Name):
		errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
	default:
		errs = append(errs, invalidEach(p.Child("name"), c.Name, utilvalidation.IsDNS1123Label(c.Name))...)
	}
	names.Insert(c.Name)
	if strings.TrimSpace(c.Image) == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateContainerResources(&c.Resources, p.Child("resources"))...)
	return errs
}

// validateContainerResources is kube's validateResourceRequirements in what users meet
// (kubectl set resources): no negative quantity, no request above its limit, and a
// resource that cannot be overcommitted (extended, hugepages) limited at its request.
func validateContainerResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limits, requests := path.Child("limits"), path.Child("requests")
	for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
		if q := r.Limits[name]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(limits.Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		q := r.Requests[name]
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(requests.Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
		limit, limited := r.Limits[name]
		switch {
		case limited && !resourcename.OvercommitAllowed(name) && q.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(requests, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case limited && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(requests, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !limited && !resourcename.OvercommitAllowed(name):
			errs = append(errs, field.Required(limits, "Limit must be set for non overcommitable resources"))
		}
	}
	return errs
}

// supportedPortProtocols are the protocols of a container port, sorted as kube lists them.
var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

// validateContainerPorts is kube's: names are IANA service names, once each in the
// container; container ports required and in range, host ports in range; protocols
// TCP, UDP or SCTP.
func validateContainerPorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			if msgs := utilvalidation.IsValidPortName(port.Name); len(msgs) != 0 {
				errs = append(errs, invalidEach(p.Child("name"), port.Name, msgs)...)
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			errs = append(errs, invalidEach(p.Child("containerPort"), port.ContainerPort, utilvalidation.IsValidPortNum(int(port.ContainerPort)))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, invalidEach(p.Child("hostPort"), port.HostPort, utilvalidation.IsValidPortNum(int(port.HostPort)))...)
		}
		if port.Protocol == "" {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if !slices.Contains(supportedPortProtocols, port.Protocol) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
	}
	return errs
}
