package corevalidation

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/internal/resourcename"
)

// The validation of a pod's init and regular containers, as kube's validateContainers,
// validateInitContainers and validateContainerCommon (pkg/apis/core/validation), with
// the feature gates of kube 1.36 at their defaults. It runs after the defaults
// (poddefaults): an omitted pull policy, termination message policy or probe threshold
// is no longer empty here.

// validatePodSpecContainers checks what a pod and a pod template both hold: at least one
// container, and the init and regular containers, whose names go into names (unique among
// them all).
func validatePodSpecContainers(spec *corev1.PodSpec, path *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	// Regular containers first, as kube: an init container named as one is the duplicate.
	pod := podOfContainers(spec)
	regularPath := path.Child("containers")
	for i := range spec.Containers {
		c, p := &spec.Containers[i], regularPath.Index(i)
		errs = append(errs, pod.validateContainer(c, p, names)...)
		errs = append(errs, pod.validateRunning(c, p)...)
		errs = append(errs, validateContainerRestartPolicy(c, p)...)
	}
	errs = append(errs, hostPortConflicts(spec.Containers, regularPath)...)
	initPath := path.Child("initContainers")
	for i := range spec.InitContainers {
		c, p := &spec.InitContainers[i], initPath.Index(i)
		errs = append(errs, pod.validateContainer(c, p, names)...)
		// Init containers run one by one: each on its own, named as kube does, at index 0.
		errs = append(errs, hostPortConflicts(spec.InitContainers[i:i+1], initPath)...)
		errs = append(errs, pod.validateInitContainer(c, p)...)
	}
	return errs
}

// hostPortConflicts is kube's checkHostPortConflicts: a host port, protocol and address
// taken once among containers that run together.
func hostPortConflicts(cs []corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	taken := sets.New[string]()
	for i, c := range cs {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if taken.Has(key) {
				errs = append(errs, field.Duplicate(path.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			taken.Insert(key)
		}
	}
	return errs
}

// containersPod is what of a pod spec its containers' validation looks at.
type containersPod struct {
	volumes       map[string]corev1.VolumeSource
	gracePeriod   *int64
	restartPolicy corev1.RestartPolicy
	hostUsers     bool
}

func podOfContainers(spec *corev1.PodSpec) containersPod {
	pod := containersPod{volumes: map[string]corev1.VolumeSource{}, gracePeriod: spec.TerminationGracePeriodSeconds,
		restartPolicy: spec.RestartPolicy, hostUsers: true}
	for _, v := range spec.Volumes {
		pod.volumes[v.Name] = v.VolumeSource
	}
	if spec.HostUsers != nil {
		pod.hostUsers = *spec.HostUsers
	}
	return pod
}

// validateContainer checks what every container holds, ephemeral ones too, at p (kube's
// validateContainerCommon); names are the pod's containers' names so far, to which it
// adds c's.
func (pod containersPod) validateContainer(c *corev1.Container, p *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, InvalidEach(p.Child("name"), c.Name, utilvalidation.IsDNS1123Label(c.Name))...)
	}
	if c.Name != "" && names.Has(c.Name) {
		errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
	}
	names.Insert(c.Name)
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, pod.validateVolumeMounts(c, p.Child("volumeMounts"))...)
	errs = append(errs, pod.validateVolumeDevices(c, p.Child("volumeDevices"))...)
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		errs = append(errs, field.Required(p.Child("imagePullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	errs = append(errs, validateContainerResources(&c.Resources, p.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, pod.restartPolicy, p.Child("resizePolicy"))...)
	return append(errs, validateSecurityContext(c.SecurityContext, pod.hostUsers, p.Child("securityContext"))...)
}

// ImageWithoutPadding is kube's validateContainerOnlyForPod: a pod's image has no
// surrounding whitespace.
func ImageWithoutPadding(c *corev1.Container, p *field.Path) field.ErrorList {
	if strings.TrimSpace(c.Image) != c.Image {
		return field.ErrorList{field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// validateRunning checks what a container running beside others may have: a regular
// container, or an init container that restarts always (a sidecar).
func (pod containersPod) validateRunning(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Lifecycle != nil {
		for _, h := range []struct {
			name    string
			handler *corev1.LifecycleHandler
		}{{"postStart", c.Lifecycle.PostStart}, {"preStop", c.Lifecycle.PreStop}} {
			if h.handler != nil {
				hp := p.Child("lifecycle", h.name)
				errs = append(errs, pod.validateHandler(probeHandler{h.handler.Exec, h.handler.HTTPGet, h.handler.TCPSocket, nil, h.handler.Sleep}, hp)...)
			}
		}
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		if pr.probe == nil {
			continue
		}
		pp := p.Child(pr.name)
		errs = append(errs, pod.validateProbe(pr.probe, pp)...)
		switch {
		case pr.name != "readinessProbe" && pr.probe.SuccessThreshold != 1:
			errs = append(errs, field.Invalid(pp.Child("successThreshold"), pr.probe.SuccessThreshold, "must be 1"))
		case pr.name == "readinessProbe" && pr.probe.TerminationGracePeriodSeconds != nil:
			errs = append(errs, field.Invalid(pp.Child("terminationGracePeriodSeconds"), pr.probe.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	return errs
}

// validateInitContainer: an init container that runs to completion may not have probes
// or lifecycle hooks (a sidecar, restartPolicy Always, may); its restart rules and its
// resize policy.
func (pod containersPod) validateInitContainer(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.RestartPolicy == nil && len(c.RestartPolicyRules) > 0 {
		errs = append(errs, field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	} else {
		errs = append(errs, validateContainerRestartPolicy(c, p)...)
	}
	sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	if sidecar {
		return append(errs, pod.validateRunning(c, p)...)
	}
	const notSidecar = "may not be set for init containers without restartPolicy=Always"
	for _, f := range []struct {
		name string
		set  bool
	}{{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil},
		{"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}} {
		if f.set {
			errs = append(errs, field.Forbidden(p.Child(f.name), notSidecar))
		}
	}
	for j, r := range c.ResizePolicy {
		if r.RestartPolicy == corev1.RestartContainer {
			errs = append(errs, field.Invalid(p.Child("resizePolicy").Index(j).Child("restartPolicy"), r.RestartPolicy,
				"must not be set to 'RestartContainer' for non-sidecar initContainers"))
		}
	}
	return errs
}

// validateContainerResources is kube's ValidateContainerResourceRequirements: the
// resources of a container.
func validateContainerResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	return validateResourceRequirements(r, ValidateContainerResourceName, path)
}

// ValidateOverhead checks a pod's or a RuntimeClass's overhead as kube does: as a
// container's limits, so its errors name path.limits.
func ValidateOverhead(overhead corev1.ResourceList, path *field.Path) field.ErrorList {
	return validateContainerResources(&corev1.ResourceRequirements{Limits: overhead}, path)
}

// validateResourceRequirements is kube's: each name as validName says, quantities not
// negative (whole where counted) and hugepages in whole pages; no request above its
// limit, and a resource that cannot be overcommitted (extended, hugepages) limited at its
// request; hugepages only beside cpu or memory.
func validateResourceRequirements(r *corev1.ResourceRequirements, validName func(corev1.ResourceName, *field.Path) field.ErrorList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limits, requests := path.Child("limits"), path.Child("requests")
	for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
		p, q := limits.Key(string(name)), r.Limits[name]
		errs = append(errs, validName(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		p, q := requests.Key(string(name)), r.Requests[name]
		errs = append(errs, validName(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
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
	if anyName(resourcename.IsHugePages, r.Limits, r.Requests) && !anyName(isCPUOrMemory, r.Limits, r.Requests) {
		errs = append(errs, field.Forbidden(path, "HugePages require cpu or memory"))
	}
	return errs
}

// validateResourceQuantity is kube's ValidateResourceQuantityValue, and for hugepages
// validateResourceQuantityHugePageValue: a quantity in whole pages of the name's size.
func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(path, q.String(), "must be greater than or equal to 0"))
	}
	if resourcename.IsInteger(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path, q, "must be an integer"))
	}
	if size, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix); ok && !wholePages(size, q) {
		errs = append(errs, field.Invalid(path, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
	}
	return errs
}

// wholePages is kube's IsHugePageResourceValueDivisible: q counts whole pages of size.
func wholePages(size string, q resource.Quantity) bool {
	page, err := resource.ParseQuantity(size)
	if err != nil || page.Sign() <= 0 || page.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%page.Value() == 0
}

// anyName: a name of one of lists is.
func anyName(is func(corev1.ResourceName) bool, lists ...corev1.ResourceList) bool {
	for _, list := range lists {
		for name := range list {
			if is(name) {
				return true
			}
		}
	}
	return false
}

func isCPUOrMemory(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

// ValidateContainerResourceName is kube's: a resource name a container can ask for, the
// standard ones without a domain, a native or an extended one with a domain.
func ValidateContainerResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	errs := ValidateResourceName(name, path)
	switch qualified := strings.Contains(string(name), "/"); {
	case !qualified && !resourcename.IsStandardContainer(name):
		errs = append(errs, field.Invalid(path, name, "must be a standard resource for containers"))
	case qualified && !resourcename.IsNative(name) && !resourcename.IsExtended(name):
		errs = append(errs, field.Invalid(path, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

// validatePodResourceName is kube's: a resource name pod-level resources may hold.
func validatePodResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if errs := ValidateResourceName(name, path); len(errs) > 0 {
		return errs
	}
	if isCPUOrMemory(name) || resourcename.IsHugePages(name) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, name, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceHugePagesPrefix, corev1.ResourceMemory})}
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
				errs = append(errs, InvalidEach(p.Child("name"), port.Name, msgs)...)
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			errs = append(errs, InvalidEach(p.Child("containerPort"), port.ContainerPort, utilvalidation.IsValidPortNum(int(port.ContainerPort)))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, InvalidEach(p.Child("hostPort"), port.HostPort, utilvalidation.IsValidPortNum(int(port.HostPort)))...)
		}
		if port.Protocol == "" {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if !slices.Contains(supportedPortProtocols, port.Protocol) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
	}
	return errs
}

// envFieldPaths are the pod fields an environment variable may take (kube's
// validEnvDownwardAPIFieldPathExpressions), besides a label or an annotation.
var envFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

// podFieldLabels are the field paths kube converts at all (ConvertDownwardAPIFieldLabel);
// spec.host is old clients' spec.nodeName.
var podFieldLabels = sets.New("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
	"metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
	"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs", "spec.host")

// envResourceFields are the container resources an environment variable may take, besides
// hugepages.
var envResourceFields = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory",
	"requests.cpu", "requests.ephemeral-storage", "requests.memory"}

// validateEnv is kube's ValidateEnv with RelaxedEnvironmentVariableValidation (GA in
// 1.34): a name of printable ASCII but '=', and a value from exactly one source.
func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		p := path.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, InvalidEach(p.Child("name"), ev.Name, utilvalidation.IsRelaxedEnvVarName(ev.Name))...)
		}
		errs = append(errs, validateEnvValueFrom(&ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvValueFrom(ev *corev1.EnvVar, path *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	sources := 0
	if from.FieldRef != nil {
		sources++
		errs = append(errs, validateFieldRef(from.FieldRef, envFieldPaths, path.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		sources++
		errs = append(errs, validateResourceFieldRef(from.ResourceFieldRef, path.Child("resourceFieldRef"), false)...)
	}
	if from.ConfigMapKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, path.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, path.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		sources++
		errs = append(errs, validateFileKeyRef(from.FileKeyRef, path.Child("fileKeyRef"))...)
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateFieldRef is kube's validateObjectFieldSelector: a field kube converts, among
// allowed (an environment variable's or a downwardAPI volume file's).
func validateFieldRef(fs *corev1.ObjectFieldSelector, allowed []string, path *field.Path) field.ErrorList {
	switch {
	case fs.APIVersion == "":
		return field.ErrorList{field.Required(path.Child("apiVersion"), "")}
	case fs.FieldPath == "":
		return field.ErrorList{field.Required(path.Child("fieldPath"), "")}
	case fs.APIVersion != "v1":
		return field.ErrorList{field.Invalid(path.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: unsupported pod version: "+fs.APIVersion)}
	}
	if name, key, ok := subscripted(fs.FieldPath); ok {
		switch name {
		case "metadata.annotations":
			return InvalidEach(path, strings.ToLower(key), utilvalidation.IsQualifiedName(strings.ToLower(key)))
		case "metadata.labels":
			return InvalidEach(path, key, utilvalidation.IsQualifiedName(key))
		}
		return field.ErrorList{field.Invalid(path.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: field label does not support subscript: "+fs.FieldPath)}
	}
	if !podFieldLabels.Has(fs.FieldPath) {
		return field.ErrorList{field.Invalid(path.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: field label not supported: "+fs.FieldPath)}
	}
	fieldPath := fs.FieldPath
	if fieldPath == "spec.host" {
		fieldPath = "spec.nodeName"
	}
	if !slices.Contains(allowed, fieldPath) {
		return field.ErrorList{field.NotSupported(path.Child("fieldPath"), fieldPath, allowed)}
	}
	return nil
}

// subscripted splits a field path such as metadata.labels['app'] (kube's
// fieldpath.SplitMaybeSubscriptedPath).
func subscripted(fieldPath string) (name, key string, ok bool) {
	s, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	name, key, ok = strings.Cut(s, "['")
	return name, key, ok && name != ""
}

// validateResourceFieldRef is kube's validateContainerResourceFieldSelector: a supported
// resource and a divisor of its unit; a volume's (not an environment variable's, which is
// its own container's) must name its container.
func validateResourceFieldRef(fs *corev1.ResourceFieldSelector, path *field.Path, volume bool) field.ErrorList {
	var errs field.ErrorList
	hugepages := strings.HasPrefix(fs.Resource, "requests.hugepages-") || strings.HasPrefix(fs.Resource, "limits.hugepages-")
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(path.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(path.Child("resource"), ""))
	case !slices.Contains(envResourceFields, fs.Resource) && !hugepages:
		errs = append(errs, field.NotSupported(path.Child("resource"), fs.Resource, envResourceFields))
	}
	if fs.Divisor.IsZero() {
		return errs
	}
	const byteUnits = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
	bytes := slices.Contains(strings.Split(byteUnits, ", "), fs.Divisor.String())
	var what string
	switch {
	case fs.Resource == "limits.cpu" || fs.Resource == "requests.cpu":
		if d := fs.Divisor.String(); d != "1m" && d != "1" {
			errs = append(errs, field.Invalid(path.Child("divisor"), fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case fs.Resource == "limits.memory" || fs.Resource == "requests.memory":
		what = "memory"
	case fs.Resource == "limits.ephemeral-storage" || fs.Resource == "requests.ephemeral-storage":
		what = "local ephemeral storage"
	case hugepages:
		what = "hugepages"
	}
	if what != "" && !bytes {
		errs = append(errs, field.Invalid(path.Child("divisor"), fs.Resource, fmt.Sprintf("only divisor's values %s are supported with the %s resource", byteUnits, what)))
	}
	return errs
}

// validateKeySelector is kube's validateConfigMapKeySelector and validateSecretKeySelector:
// the object's name (may be empty) and a key.
func validateKeySelector(name, key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name != "" {
		errs = append(errs, InvalidEach(path.Child("name"), name, validation.NameIsDNSSubdomain(name, false))...)
	}
	if key == "" {
		return append(errs, field.Required(path.Child("key"), ""))
	}
	return append(errs, InvalidEach(path.Child("key"), key, utilvalidation.IsConfigMapKey(key))...)
}

// validateFileKeyRef is kube's validateFileKeySelector (EnvFiles, beta in 1.35); that the
// volume is an emptyDir of the pod is validateFileKeyRefVolumes'.
func validateFileKeyRef(s *corev1.FileKeySelector, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	} else {
		errs = append(errs, InvalidEach(path.Child("key"), s.Key, utilvalidation.IsRelaxedEnvVarName(s.Key))...)
	}
	if s.VolumeName == "" {
		errs = append(errs, field.Required(path.Child("volumeName"), ""))
	} else {
		errs = append(errs, InvalidEach(path.Child("volumeName"), s.VolumeName, utilvalidation.IsDNS1123Label(s.VolumeName))...)
	}
	if s.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	} else {
		errs = append(errs, NoBacksteps(s.Path, path.Child("path"))...)
	}
	return errs
}

// validateEnvFrom is kube's ValidateEnvFrom: a prefix that makes valid names, and exactly
// one of a ConfigMap or a Secret, named.
func validateEnvFrom(envFrom []corev1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ef := range envFrom {
		p := path.Index(i)
		if ef.Prefix != "" {
			errs = append(errs, InvalidEach(p.Child("prefix"), ef.Prefix, utilvalidation.IsRelaxedEnvVarName(ef.Prefix))...)
		}
		sources := 0
		if ef.ConfigMapRef != nil {
			sources++
			errs = append(errs, validateEnvSourceName(ef.ConfigMapRef.Name, p.Child("configMapRef"))...)
		}
		if ef.SecretRef != nil {
			sources++
			errs = append(errs, validateEnvSourceName(ef.SecretRef.Name, p.Child("secretRef"))...)
		}
		// kube reports these at envFrom itself, not at the entry.
		switch {
		case sources == 0:
			errs = append(errs, field.Invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
		case sources > 1:
			errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateEnvSourceName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path.Child("name"), "")}
	}
	return InvalidEach(path.Child("name"), name, validation.NameIsDNSSubdomain(name, true))
}

// NoBacksteps is kube's validatePathNoBacksteps: no '..' element.
func NoBacksteps(target string, path *field.Path) field.ErrorList {
	if slices.Contains(strings.Split(target, "/"), "..") {
		return field.ErrorList{field.Invalid(path, target, "must not contain '..'")}
	}
	return nil
}

// localDescendingPath is kube's validateLocalDescendingPath: relative, without '..'.
func localDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, NoBacksteps(target, p)...)
}

// validateVolumeMounts is kube's ValidateVolumeMounts. Some of its paths lack the
// mount's index (subPath, subPathExpr, mountPropagation, recursiveReadOnly): kube's own.
func (pod containersPod) validateVolumeMounts(c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := path.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, ok := pod.volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if mountPaths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
		for _, d := range c.VolumeDevices {
			if d.Name == m.Name {
				errs = append(errs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
			}
		}
		for _, d := range c.VolumeDevices {
			if d.DevicePath == m.MountPath {
				errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
				break
			}
		}
		if m.SubPath != "" {
			errs = append(errs, localDescendingPath(m.SubPath, path.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, localDescendingPath(m.SubPathExpr, path.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			errs = append(errs, validateMountPropagation(*m.MountPropagation, c.SecurityContext, path.Child("mountPropagation"))...)
		}
		errs = append(errs, validateRecursiveReadOnly(&m, path.Child("recursiveReadOnly"))...)
	}
	return errs
}

var mountPropagations = []corev1.MountPropagationMode{corev1.MountPropagationBidirectional,
	corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}

func validateMountPropagation(mode corev1.MountPropagationMode, sc *corev1.SecurityContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(mountPropagations, mode) {
		errs = append(errs, field.NotSupported(path, mode, mountPropagations))
	}
	privileged := sc != nil && sc.Privileged != nil && *sc.Privileged
	if mode == corev1.MountPropagationBidirectional && !privileged {
		errs = append(errs, field.Forbidden(path, "Bidirectional mount propagation is available only to privileged containers"))
	}
	return errs
}

func validateRecursiveReadOnly(m *corev1.VolumeMount, path *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(path, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(path, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(path, *m.RecursiveReadOnly, []corev1.RecursiveReadOnlyMode{
			corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}))
	}
	return errs
}

// validateVolumeDevices is kube's ValidateVolumeDevices: block devices of claims, once
// each, at a path no mount has.
func (pod containersPod) validateVolumeDevices(c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	devicePaths, deviceNames := sets.New[string](), sets.New[string]()
	for i, d := range c.VolumeDevices {
		p := path.Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if deviceNames.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		switch src, ok := pod.volumes[d.Name]; {
		case !ok:
			errs = append(errs, field.NotFound(p.Child("name"), d.Name))
		case src.PersistentVolumeClaim == nil && src.Ephemeral == nil:
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		}
		if devicePaths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(NoBacksteps(d.DevicePath, p)) > 0 {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			devicePaths.Insert(d.DevicePath)
		}
		for _, m := range c.VolumeMounts {
			if m.Name == d.Name {
				errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
			}
		}
		for _, m := range c.VolumeMounts {
			if m.MountPath == d.DevicePath {
				errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
				break
			}
		}
		if d.Name != "" {
			deviceNames.Insert(d.Name)
		}
	}
	return errs
}

// validateResizePolicy is kube's: cpu and memory once each, a known restart policy, and
// none that restarts a container of a pod that never restarts.
func validateResizePolicy(policies []corev1.ContainerResizePolicy, podRestart corev1.RestartPolicy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	for i, r := range policies {
		if seen.Has(r.ResourceName) {
			errs = append(errs, field.Duplicate(path.Index(i), r.ResourceName))
		}
		seen.Insert(r.ResourceName)
		switch r.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(path, ""))
		default:
			errs = append(errs, field.NotSupported(path, r.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch r.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(path, ""))
		default:
			errs = append(errs, field.NotSupported(path, r.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
		if podRestart == corev1.RestartPolicyNever && r.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(path, r.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

// validateSecurityContext is kube's ValidateSecurityContext for Linux containers.
func validateSecurityContext(sc *corev1.SecurityContext, hostUsers bool, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, InvalidEach(path.Child("runAsUser"), *sc.RunAsUser, utilvalidation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, InvalidEach(path.Child("runAsGroup"), *sc.RunAsGroup, utilvalidation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	if pm := sc.ProcMount; pm != nil {
		if *pm != corev1.DefaultProcMount && *pm != corev1.UnmaskedProcMount {
			errs = append(errs, field.NotSupported(path.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
		if hostUsers && *pm == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(path.Child("procMount"), pm, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil && slices.Contains(sc.Capabilities.Add, "CAP_SYS_ADMIN") {
			errs = append(errs, field.Invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
		}
	}
	return append(errs, validateAppArmorProfile(sc.AppArmorProfile, path.Child("appArmorProfile"))...)
}

// validateSeccompProfile is kube's validateSeccompProfileField.
func validateSeccompProfile(sp *corev1.SeccompProfile, path *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(path.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), sp.Type, []corev1.SeccompProfileType{
			corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	switch {
	case sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(path.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == corev1.SeccompProfileTypeLocalhost:
		errs = append(errs, localDescendingPath(*sp.LocalhostProfile, path.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(path.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

// validateAppArmorProfile is kube's ValidateAppArmorProfileField.
func validateAppArmorProfile(ap *corev1.AppArmorProfile, path *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	var errs field.ErrorList
	lp := path.Child("localhostProfile")
	switch ap.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		const maxLength = 4095 // PATH_MAX - 1
		switch {
		case ap.LocalhostProfile == nil:
			errs = append(errs, field.Required(lp, "must be set when AppArmor type is Localhost"))
		case strings.TrimSpace(*ap.LocalhostProfile) != *ap.LocalhostProfile:
			errs = append(errs, field.Invalid(lp, *ap.LocalhostProfile, "must not be padded with whitespace"))
		case *ap.LocalhostProfile == "":
			errs = append(errs, field.Required(lp, "must be set when AppArmor type is Localhost"))
		}
		if ap.LocalhostProfile != nil && len(*ap.LocalhostProfile) > maxLength {
			errs = append(errs, field.TooLong(lp, "", maxLength))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(lp, ap.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(path.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), ap.Type, []corev1.AppArmorProfileType{
			corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

// probeHandler is what a probe and a lifecycle hook share (kube's commonHandler): one
// action among these.
type probeHandler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

// validateProbe is kube's validateProbe: one handler; the thresholds and delays, defaulted
// before, not negative; a grace period of its own above 0.
func (pod containersPod) validateProbe(pr *corev1.Probe, path *field.Path) field.ErrorList {
	h := pr.ProbeHandler
	errs := pod.validateHandler(probeHandler{h.Exec, h.HTTPGet, h.TCPSocket, h.GRPC, nil}, path)
	for _, f := range []struct {
		name  string
		value int32
	}{{"initialDelaySeconds", pr.InitialDelaySeconds}, {"timeoutSeconds", pr.TimeoutSeconds}, {"periodSeconds", pr.PeriodSeconds},
		{"successThreshold", pr.SuccessThreshold}, {"failureThreshold", pr.FailureThreshold}} {
		errs = append(errs, validation.ValidateNonnegativeField(int64(f.value), path.Child(f.name))...)
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateHandler is kube's: exactly one action, each well formed; a sleep within the
// pod's grace period (PodLifecycleSleepActionAllowZero, GA in 1.34: 0 is allowed).
func (pod containersPod) validateHandler(h probeHandler, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	handlers := 0
	one := func(name string, set bool, check func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if handlers > 0 {
			errs = append(errs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
			return
		}
		handlers++
		errs = append(errs, check(path.Child(name))...)
	}
	one("exec", h.exec != nil, func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	one("httpGet", h.httpGet != nil, func(p *field.Path) field.ErrorList { return validateHTTPGet(h.httpGet, p) })
	one("tcpSocket", h.tcpSocket != nil, func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, p.Child("port"))
	})
	one("grpc", h.grpc != nil, func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	one("sleep", h.sleep != nil, func(p *field.Path) field.ErrorList {
		if g := pod.gracePeriod; g != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *g) {
			return field.ErrorList{field.Invalid(p, h.sleep.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *g))}
		}
		return nil
	})
	if handlers == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	return errs
}

var httpSchemes = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}

func validateHTTPGet(h *corev1.HTTPGetAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, path.Child("port"))...)
	if !slices.Contains(httpSchemes, h.Scheme) {
		errs = append(errs, field.NotSupported(path.Child("scheme"), h.Scheme, httpSchemes))
	}
	for _, header := range h.HTTPHeaders {
		errs = append(errs, InvalidEach(path.Child("httpHeaders"), header.Name, utilvalidation.IsHTTPHeaderName(header.Name))...)
	}
	return errs
}

// validatePortNumOrName is kube's ValidatePortNumOrName.
func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		return InvalidEach(path, port.StrVal, utilvalidation.IsValidPortName(port.StrVal))
	}
	return InvalidEach(path, port.IntValue(), utilvalidation.IsValidPortNum(port.IntValue()))
}

var (
	containerRestartPolicies = []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways,
		corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure}
	restartRuleOperators = []corev1.ContainerRestartRuleOnExitCodesOperator{corev1.ContainerRestartRuleOnExitCodesOpIn,
		corev1.ContainerRestartRuleOnExitCodesOpNotIn}
	// restartRuleActions: RestartAllContainers is beta, on by default, in 1.36.
	restartRuleActions = []corev1.ContainerRestartRuleAction{corev1.ContainerRestartRuleActionRestart,
		corev1.ContainerRestartRuleActionRestartAllContainers}
)

// validateContainerRestartPolicy is kube's (ContainerRestartRules, beta in 1.35): any
// container may set its restart policy and the rules that decide by exit code.
func validateContainerRestartPolicy(c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	p := path.Child("restartPolicy")
	switch {
	case c.RestartPolicy == nil && len(c.RestartPolicyRules) == 0:
		return nil
	case c.RestartPolicy == nil:
		errs = append(errs, field.Required(p, "must specify restartPolicy when restart rules are used"))
	case !slices.Contains(containerRestartPolicies, *c.RestartPolicy):
		errs = append(errs, field.NotSupported(p, *c.RestartPolicy, containerRestartPolicies))
	}
	rules := path.Child("restartPolicyRules")
	if len(c.RestartPolicyRules) > 20 {
		errs = append(errs, field.TooMany(rules, len(c.RestartPolicyRules), 20))
	}
	for i, r := range c.RestartPolicyRules {
		rp := rules.Index(i)
		if !slices.Contains(restartRuleActions, r.Action) {
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, restartRuleActions))
		}
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		if !slices.Contains(restartRuleOperators, r.ExitCodes.Operator) {
			errs = append(errs, field.NotSupported(rp.Child("exitCodes", "operator"), r.ExitCodes.Operator, restartRuleOperators))
		}
		if len(r.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(rp.Child("exitCodes", "values"), len(r.ExitCodes.Values), 255))
		}
	}
	return errs
}
