package corevalidation

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks of kube's ValidatePodSpec and ValidatePodCreate that look at every container
// beside the pod's own fields: the user namespace's limits, the OS's fields, the seccomp
// and AppArmor annotations against the fields (pkg/apis/core/validation/validation.go).

// PathedContainer is a container of a pod spec (pointing into it) and its field path.
type PathedContainer struct {
	*corev1.Container
	Path *field.Path
}

// Containers is kube's VisitContainersWithPath: init, regular then ephemeral containers.
func Containers(spec *corev1.PodSpec, path *field.Path) []PathedContainer {
	var all []PathedContainer
	for i := range spec.InitContainers {
		all = append(all, PathedContainer{&spec.InitContainers[i], path.Child("initContainers").Index(i)})
	}
	for i := range spec.Containers {
		all = append(all, PathedContainer{&spec.Containers[i], path.Child("containers").Index(i)})
	}
	for i := range spec.EphemeralContainers {
		c := (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
		all = append(all, PathedContainer{c, path.Child("ephemeralContainers").Index(i)})
	}
	return all
}

// validateHostUsers is kube's validateHostUsers: a pod in its own user namespace shares
// none of the node's others (hostNetwork too, its alpha gate off) and has no block
// devices. kube spells two of the paths capitalised.
func validateHostUsers(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	const msg = "when `hostUsers` is false"
	var errs field.ErrorList
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(path.Child("hostNetwork"), msg))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(path.Child("HostPID"), msg))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(path.Child("HostIPC"), msg))
	}
	for _, pc := range Containers(spec, path) {
		if len(pc.VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(pc.Path.Child("volumeDevices"), msg))
		}
	}
	return errs
}

// validateOS is kube's validateOS and, for a known OS, validateLinux or validateWindows:
// a linux pod has no Windows options, a windows pod none of Linux's.
func validateOS(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	switch name := spec.OS.Name; name {
	case "":
		return field.ErrorList{field.Required(path.Child("os", "name"), "")}
	case corev1.Linux:
		return validateLinuxFields(spec, path)
	case corev1.Windows:
		return validateWindowsFields(spec, path)
	default:
		return field.ErrorList{field.NotSupported(path.Child("os"), name, []corev1.OSName{corev1.Linux, corev1.Windows})}
	}
}

func validateLinuxFields(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	const msg = "windows options cannot be set for a linux pod"
	var errs field.ErrorList
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(path.Child("securityContext", "windowsOptions"), msg))
	}
	for _, pc := range Containers(spec, path) {
		if sc := pc.SecurityContext; sc != nil && sc.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(pc.Path.Child("securityContext", "windowsOptions"), msg))
		}
	}
	return errs
}

// setField is a field of a pod or a container, at its path, and whether it is set.
type setField struct {
	path *field.Path
	set  bool
}

// forbiddenOnWindows refuses each of fields that is set.
func forbiddenOnWindows(fields []setField) field.ErrorList {
	var errs field.ErrorList
	for _, f := range fields {
		if f.set {
			errs = append(errs, field.Forbidden(f.path, "cannot be set for a windows pod"))
		}
	}
	return errs
}

// validateWindowsFields is kube's validateWindows, in its order.
func validateWindowsFields(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	// kube's internal pod security context holds the host namespaces and process sharing.
	sc, scPath := spec.SecurityContext, path.Child("securityContext")
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	errs = append(errs, forbiddenOnWindows([]setField{
		{scPath.Child("appArmorProfile"), sc.AppArmorProfile != nil},
		{scPath.Child("seLinuxOptions"), sc.SELinuxOptions != nil},
		{path.Child("hostUsers"), spec.HostUsers != nil},
		{path.Child("hostPID"), spec.HostPID},
		{path.Child("hostIPC"), spec.HostIPC},
		{scPath.Child("seccompProfile"), sc.SeccompProfile != nil},
		{scPath.Child("fsGroup"), sc.FSGroup != nil},
		{scPath.Child("fsGroupChangePolicy"), sc.FSGroupChangePolicy != nil},
		{scPath.Child("sysctls"), len(sc.Sysctls) > 0},
		{path.Child("shareProcessNamespace"), spec.ShareProcessNamespace != nil},
		{scPath.Child("runAsUser"), sc.RunAsUser != nil},
		{scPath.Child("runAsGroup"), sc.RunAsGroup != nil},
		{scPath.Child("supplementalGroups"), sc.SupplementalGroups != nil},
		{scPath.Child("supplementalGroupsPolicy"), sc.SupplementalGroupsPolicy != nil},
		{scPath.Child("seLinuxChangePolicy"), sc.SELinuxChangePolicy != nil},
	})...)
	for _, pc := range Containers(spec, path) {
		c := pc.SecurityContext
		if c == nil {
			continue
		}
		p := pc.Path.Child("securityContext")
		errs = append(errs, forbiddenOnWindows([]setField{
			{p.Child("appArmorProfile"), c.AppArmorProfile != nil},
			{p.Child("seLinuxOptions"), c.SELinuxOptions != nil},
			{p.Child("seccompProfile"), c.SeccompProfile != nil},
			{p.Child("capabilities"), c.Capabilities != nil},
			{p.Child("readOnlyRootFilesystem"), c.ReadOnlyRootFilesystem != nil},
			{p.Child("privileged"), c.Privileged != nil},
			{p.Child("allowPrivilegeEscalation"), c.AllowPrivilegeEscalation != nil},
			{p.Child("procMount"), c.ProcMount != nil},
			{p.Child("runAsUser"), c.RunAsUser != nil},
			{p.Child("runAsGroup"), c.RunAsGroup != nil},
		})...)
	}
	return errs
}

// profileAnnotation is how a deprecated seccomp or AppArmor annotation names each type
// of profile: fixed values, or a prefix before a local profile's name; kind names it in
// the errors.
type profileAnnotation struct {
	kind           string
	unconfined     string
	runtimeDefault []string
	localhost      string
}

var (
	seccompAnnotation = profileAnnotation{"seccomp", corev1.SeccompProfileNameUnconfined,
		[]string{corev1.SeccompProfileRuntimeDefault, corev1.DeprecatedSeccompProfileDockerDefault}, corev1.SeccompLocalhostProfileNamePrefix}
	appArmorAnnotation = profileAnnotation{"apparmor", corev1.DeprecatedAppArmorBetaProfileNameUnconfined,
		[]string{corev1.DeprecatedAppArmorBetaProfileRuntimeDefault}, corev1.DeprecatedAppArmorBetaProfileNamePrefix}
)

// mismatch is kube's validateSeccompAnnotationsAndFieldsMatch and its AppArmor twin: the
// annotation's value must name the field's profile (Unconfined, RuntimeDefault or
// Localhost, the same words in both APIs).
func (a profileAnnotation) mismatch(value, profileType string, localhost *string, path *field.Path) field.ErrorList {
	typeMismatch := field.ErrorList{field.Forbidden(path.Child("type"), a.kind+" type in annotation and field must match")}
	switch profileType {
	case string(corev1.SeccompProfileTypeUnconfined):
		if value != a.unconfined {
			return typeMismatch
		}
	case string(corev1.SeccompProfileTypeRuntimeDefault):
		if !slices.Contains(a.runtimeDefault, value) {
			return typeMismatch
		}
	case string(corev1.SeccompProfileTypeLocalhost):
		if !strings.HasPrefix(value, a.localhost) {
			return typeMismatch
		}
		if localhost == nil || strings.TrimPrefix(value, a.localhost) != *localhost {
			return field.ErrorList{field.Forbidden(path.Child("localhostProfile"), a.kind+" profile in annotation and field must match")}
		}
	}
	return nil
}

// ValidateProfileAnnotations are kube's create-time checks validateSeccompAnnotationsAndFields
// and validateAppArmorAnnotationsAndFieldsMatchOnCreate: where a deprecated annotation and
// a field both give a profile, they agree.
func ValidateProfileAnnotations(annotations map[string]string, spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	sc := spec.SecurityContext
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	if p, ok := annotations[corev1.SeccompPodAnnotationKey]; ok && sc.SeccompProfile != nil {
		errs = append(errs, seccompAnnotation.mismatch(p, string(sc.SeccompProfile.Type), sc.SeccompProfile.LocalhostProfile,
			path.Child("securityContext", "seccompProfile"))...)
	}
	for _, pc := range Containers(spec, path) {
		if s := pc.SecurityContext; s != nil && s.SeccompProfile != nil {
			if p, ok := annotations[corev1.SeccompContainerAnnotationKeyPrefix+pc.Name]; ok {
				errs = append(errs, seccompAnnotation.mismatch(p, string(s.SeccompProfile.Type), s.SeccompProfile.LocalhostProfile,
					pc.Path.Child("securityContext", "seccompProfile"))...)
			}
		}
	}
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return errs
	}
	for _, pc := range Containers(spec, path) {
		profile := sc.AppArmorProfile
		if s := pc.SecurityContext; s != nil && s.AppArmorProfile != nil {
			profile = s.AppArmorProfile
		}
		if p, ok := annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+pc.Name]; ok && profile != nil {
			errs = append(errs, appArmorAnnotation.mismatch(p, string(profile.Type), profile.LocalhostProfile,
				pc.Path.Child("securityContext", "appArmorProfile"))...)
		}
	}
	return errs
}
