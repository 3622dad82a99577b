package core

import (
	"fmt"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/internal/deletioncost"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"
	"github.com/minik8s/minik8s/pkg/restartpolicy"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// podStatusUpdate is kube's pod status strategy: the QoS class a writer left out and the
// observed generations it cleared are kept (old kubelets drop them), and the status is
// checked as ValidatePodStatusUpdate checks it, with 1.36's gates at their defaults.
var podStatusUpdate = registry.SubresourceRules{
	Prepare: func(obj, old runtime.Object) {
		s, o := &obj.(*corev1.Pod).Status, &old.(*corev1.Pod).Status
		if s.QOSClass == "" {
			s.QOSClass = o.QOSClass
		}
		keepObservedGenerations(s, o)
		// DRANodeAllocatableResources is alpha: kube drops its status unless stored already
		if len(o.NodeAllocatableResourceClaimStatuses) == 0 {
			s.NodeAllocatableResourceClaimStatuses = nil
		}
	},
	Validate: func(obj, old runtime.Object) field.ErrorList {
		return validatePodStatusUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
	},
}

// keepObservedGenerations: a status or condition written without an observed generation
// keeps the stored one (the conditions' matched by type, in order).
func keepObservedGenerations(s, o *corev1.PodStatus) {
	if s.ObservedGeneration == 0 {
		s.ObservedGeneration = o.ObservedGeneration
	}
	stored := map[corev1.PodConditionType][]int64{}
	for _, c := range o.Conditions {
		stored[c.Type] = append(stored[c.Type], c.ObservedGeneration)
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		var generation int64
		if gens := stored[c.Type]; len(gens) > 0 {
			generation, stored[c.Type] = gens[0], gens[1:]
		}
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = generation
		}
	}
}

var podStatusPath = field.NewPath("status")

func validatePodStatusUpdate(p, old *corev1.Pod) field.ErrorList {
	s, os := &p.Status, &old.Status
	path := podStatusPath
	_, oldCostErr := deletioncost.Of(old.Annotations)
	errs := corevalidation.ValidatePodSpecificAnnotationUpdates(p.Annotations, old.Annotations, &p.Spec, field.NewPath("metadata", "annotations"), oldCostErr != nil)
	errs = append(errs, validatePodConditions(s.Conditions, path.Child("conditions"))...)
	if s.NominatedNodeName != os.NominatedNodeName && s.NominatedNodeName != "" {
		errs = append(errs, corevalidation.InvalidEach(path.Child("nominatedNodeName"), s.NominatedNodeName, validation.NameIsDNSSubdomain(s.NominatedNodeName, false))...)
		if old.Spec.NodeName != "" { // ClearingNominatedNodeNameAfterBinding
			errs = append(errs, field.Forbidden(path.Child("nominatedNodeName"), "may not be set on pods that are already bound to a node"))
		}
	}
	if s.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(path.Child("observedGeneration"), s.ObservedGeneration, "must be a non-negative integer"))
	}
	errs = append(errs, validation.ValidateImmutableField(s.QOSClass, os.QOSClass, path.Child("qosClass"))...)
	errs = append(errs, stayTerminated(s.ContainerStatuses, os.ContainerStatuses, path.Child("containerStatuses"), &old.Spec, old.Spec.Containers)...)
	errs = append(errs, stayTerminated(s.InitContainerStatuses, os.InitContainerStatuses, path.Child("initContainerStatuses"), &old.Spec, old.Spec.InitContainers)...)
	errs = append(errs, stayTerminated(s.EphemeralContainerStatuses, os.EphemeralContainerStatuses, path.Child("ephemeralContainerStatuses"), &old.Spec, nil)...)
	errs = append(errs, validateClaimStatuses(s.ResourceClaimStatuses, p.Spec.ResourceClaims, path.Child("resourceClaimStatuses"))...)
	errs = append(errs, validateExtendedClaimStatus(s.ExtendedResourceClaimStatus, &p.Spec, path.Child("extendedResourceClaimStatus"))...)
	errs = append(errs, validatePodIPList(path.Child("podIPs"), ipsOf(s.PodIPs), ipsOf(os.PodIPs), registry.GoNamed{V: s.PodIPs})...)
	if len(s.HostIPs) > 0 {
		if s.HostIP != s.HostIPs[0].IP {
			errs = append(errs, field.Invalid(path.Child("hostIPs").Index(0).Child("ip"), s.HostIPs[0].IP, "must be equal to `hostIP`"))
		}
		errs = append(errs, validatePodIPList(path.Child("hostIPs"), hostIPsOf(s.HostIPs), hostIPsOf(os.HostIPs), registry.GoNamed{V: s.HostIPs})...)
	}
	for _, l := range []struct {
		name     string
		statuses []corev1.ContainerStatus
	}{{"containerStatuses", s.ContainerStatuses}, {"initContainerStatuses", s.InitContainerStatuses}, {"ephemeralContainerStatuses", s.EphemeralContainerStatuses}} {
		errs = append(errs, validateStatusUsers(l.statuses, path.Child(l.name), p.Spec.OS)...)
	}
	errs = append(errs, validateAllocatedResourcesStatus(s.ContainerStatuses, path.Child("containerStatuses"), p.Spec.Containers)...)
	errs = append(errs, validateAllocatedResourcesStatus(s.InitContainerStatuses, path.Child("initContainerStatuses"), p.Spec.InitContainers)...)
	for i, cs := range s.EphemeralContainerStatuses { // an ephemeral container is given no resources
		if len(cs.AllocatedResourcesStatus) > 0 {
			errs = append(errs, field.Forbidden(path.Child("ephemeralContainerStatuses").Index(i).Child("allocatedResourcesStatus"), "must not be specified in container status"))
		}
	}
	return errs
}

// validatePodConditions: each observed generation is not negative, and a condition of a
// type other than the kubelet's and the scheduler's is a qualified name.
func validatePodConditions(conditions []corev1.PodCondition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range conditions {
		if c.ObservedGeneration < 0 {
			errs = append(errs, field.Invalid(path.Index(i).Child("observedGeneration"), c.ObservedGeneration, "must be a non-negative integer"))
		}
		switch c.Type {
		case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized:
		default:
			errs = append(errs, corevalidation.InvalidEach(path.Index(i).Child("Type"), string(c.Type), utilvalidation.IsQualifiedName(string(c.Type)))...)
		}
	}
	return errs
}

// stayTerminated is kube's ValidateContainerStateTransition (ContainerRestartRules and
// RestartAllContainersOnContainerExits on): a terminated container that will not run again
// is not reported running or waiting. containers are the spec's of these statuses (none for
// ephemeral containers, which never run again).
func stayTerminated(statuses, old []corev1.ContainerStatus, path *field.Path, spec *corev1.PodSpec, containers []corev1.Container) field.ErrorList {
	if containers != nil && restartpolicy.AnyRestartsAll(spec) {
		return nil
	}
	var errs field.ErrorList
	for i, o := range old {
		if o.State.Terminated == nil {
			continue
		}
		for _, cs := range statuses {
			if cs.Name != o.Name || cs.State.Terminated != nil {
				continue
			}
			restarts := false
			for j := range containers {
				if containers[j].Name == o.Name {
					restarts = restartpolicy.ContainerShouldRestart(spec, &containers[j], o.State.Terminated.ExitCode)
					break
				}
			}
			if !restarts {
				errs = append(errs, field.Forbidden(path.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
			break
		}
	}
	return errs
}

// validateClaimStatuses: each names one of the pod's claims, once, and the claim made for it.
func validateClaimStatuses(statuses []corev1.PodResourceClaimStatus, claims []corev1.PodResourceClaim, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	named := sets.New[string]()
	for i, s := range statuses {
		p := path.Index(i)
		if !hasClaim(claims, s.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, "must match the name of an entry in `spec.resourceClaims`"))
		}
		if named.Has(s.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		named.Insert(s.Name)
		if s.ResourceClaimName != nil {
			errs = append(errs, corevalidation.InvalidEach(p.Child("resourceClaimName"), s.ResourceClaimName, validation.NameIsDNSSubdomain(*s.ResourceClaimName, false))...)
		}
	}
	return errs
}

// validateExtendedClaimStatus (DRAExtendedResource, beta in 1.36): the claim made for
// the pod's extended resources maps each container's request of one to a request of
// the claim, once.
func validateExtendedClaimStatus(s *corev1.PodExtendedResourceClaimStatus, spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	mappings := path.Child("requestMappings")
	if len(s.RequestMappings) == 0 {
		errs = append(errs, field.Required(mappings, "at least one request mapping is required"))
	}
	type key struct{ container, resource, request string }
	seen := sets.New[key]()
	for i, m := range s.RequestMappings {
		p := mappings.Index(i)
		// an app container's name wins over an init container's, as kube's map of them
		c := containerNamed(spec.Containers, m.ContainerName)
		if c == nil {
			c = containerNamed(spec.InitContainers, m.ContainerName)
		}
		if c == nil {
			errs = append(errs, field.Invalid(p.Child("containerName"), m.ContainerName, "must match the name of an entry in spec.initContainers.name or spec.containers.name"))
		} else if _, ok := c.Resources.Requests[corev1.ResourceName(m.ResourceName)]; !ok {
			errs = append(errs, field.Invalid(p.Child("resourceName"), m.ResourceName, "must match the extended resource name of an entry in spec.initContainers.resources.requests or spec.containers.resources.requests"))
		}
		// kube names the request's path without its index
		errs = append(errs, corevalidation.DNSLabel(m.RequestName, path.Child("requestName"))...)
		k := key{m.ContainerName, m.ResourceName, m.RequestName}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(p.Child("containerName"), m.ContainerName), field.Duplicate(p.Child("resourceName"), m.ResourceName),
				field.Duplicate(p.Child("requestName"), m.RequestName))
		}
		seen.Insert(k)
	}
	if s.ResourceClaimName == "" {
		errs = append(errs, field.Required(path.Child("resourceClaimName"), ""))
	} else {
		errs = append(errs, corevalidation.InvalidEach(path.Child("resourceClaimName"), s.ResourceClaimName, validation.NameIsDNSSubdomain(s.ResourceClaimName, false))...)
	}
	return errs
}

func hasClaim(claims []corev1.PodResourceClaim, name string) bool {
	for _, c := range claims {
		if c.Name == name {
			return true
		}
	}
	return false
}

func ipsOf(ips []corev1.PodIP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.IP
	}
	return out
}

func hostIPsOf(ips []corev1.HostIP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.IP
	}
	return out
}

// validatePodIPList: each new address is an IP (one stored before stricter parsing may
// stay), at most one of each family; list is the whole list as kube prints it.
func validatePodIPList(path *field.Path, ips, old []string, list any) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range ips {
		errs = append(errs, utilvalidation.IsValidIPForLegacyField(path.Index(i), ip, true, old)...)
	}
	if len(ips) > 1 {
		dual, err := netutils.IsDualStackIPStrings(ips)
		if err != nil {
			errs = append(errs, field.InternalError(path, fmt.Errorf("failed to check for dual stack with error:%v", err)))
		}
		if !dual || len(ips) > 2 {
			errs = append(errs, field.Invalid(path, list, "may specify no more than one IP for each IP family"))
		}
	}
	return errs
}

// validateStatusUsers: the identity a container runs as is a valid Linux one, and a
// Windows pod reports none.
func validateStatusUsers(statuses []corev1.ContainerStatus, path *field.Path, os *corev1.PodOS) field.ErrorList {
	var errs field.ErrorList
	windows := os != nil && os.Name == corev1.Windows
	for i, cs := range statuses {
		if cs.User == nil || cs.User.Linux == nil {
			continue
		}
		p := path.Index(i).Child("user", "linux")
		if windows {
			errs = append(errs, field.Forbidden(p, "cannot be set for a windows pod"))
			continue
		}
		u := cs.User.Linux
		errs = append(errs, corevalidation.InvalidEach(p.Child("uid"), u.UID, utilvalidation.IsValidUserID(u.UID))...)
		errs = append(errs, corevalidation.InvalidEach(p.Child("gid"), u.GID, utilvalidation.IsValidGroupID(u.GID))...)
		for g, gid := range u.SupplementalGroups {
			errs = append(errs, corevalidation.InvalidEach(p.Child("supplementalGroups").Index(g), gid, utilvalidation.IsValidGroupID(gid))...)
		}
	}
	return errs
}

var resourceHealths = []corev1.ResourceHealthStatus{corev1.ResourceHealthStatusHealthy, corev1.ResourceHealthStatusUnhealthy, corev1.ResourceHealthStatusUnknown}

// validateAllocatedResourcesStatus: the health a container reports is of a resource it
// requested or a claim it uses, each device once, with a known health and a message
// that is not empty.
func validateAllocatedResourcesStatus(statuses []corev1.ContainerStatus, path *field.Path, containers []corev1.Container) field.ErrorList {
	var errs field.ErrorList
	for i, cs := range statuses {
		c := containerNamed(containers, cs.Name)
		for j, ar := range cs.AllocatedResourcesStatus {
			p := path.Index(i).Child("allocatedResourcesStatus").Index(j)
			if c != nil { // a status of no container of the spec is let be, as kube does
				if msg, ok := allocatedOf(c, ar.Name); !ok {
					errs = append(errs, field.Invalid(p.Child("name"), ar.Name, msg))
				}
			}
			ids := sets.New[corev1.ResourceID]()
			for k, r := range ar.Resources {
				rp := p.Child("resources").Index(k)
				if !slices.Contains(resourceHealths, r.Health) {
					errs = append(errs, field.NotSupported(rp.Child("health"), r.Health, resourceHealths))
				}
				if r.Message != nil {
					if *r.Message == "" {
						errs = append(errs, field.Required(rp.Child("message"), "must be non-empty if specified"))
					} else if len(*r.Message) > corev1.ResourceHealthMessageMaxLength {
						errs = append(errs, field.TooLong(rp.Child("message"), *r.Message, corev1.ResourceHealthMessageMaxLength))
					}
				}
				if ids.Has(r.ResourceID) {
					errs = append(errs, field.Duplicate(rp.Child("resourceID"), r.ResourceID))
				}
				ids.Insert(r.ResourceID)
			}
		}
	}
	return errs
}

func containerNamed(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// allocatedOf: name is one of c's requests, or "claim:<claim>[/<request>]" one of its claims.
func allocatedOf(c *corev1.Container, name corev1.ResourceName) (string, bool) {
	if !strings.HasPrefix(string(name), "claim:") {
		_, ok := c.Resources.Requests[name]
		return "must match one of the container's resource requests", ok
	}
	for _, claim := range c.Resources.Claims {
		n := "claim:" + claim.Name
		if claim.Request != "" {
			n += "/" + claim.Request
		}
		if corev1.ResourceName(n) == name {
			return "", true
		}
	}
	return "must match one of the container's resource claims in a format 'claim:<claimName>/<request>' or 'claim:<claimName>' if request is empty", false
}
