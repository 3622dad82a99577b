// Package corevalidation is kube's pkg/apis/core/validation for what several kinds
// share: a pod's spec (containers, volumes, scheduling constraints, OS fields, DNS,
// sysctls), which a pod and every workload's template carry, a claim's spec, which a
// claim, a StatefulSet's claim templates and an ephemeral volume carry, and the names of
// resources and drivers. The registry applies it under each kind's own field paths.
package corevalidation

import (
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/internal/resourcename"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ValidatePodSpec is kube's ValidatePodSpec, what a pod and a pod template share: the
// containers (whose names go into names) and the pod-level fields. The restart policy
// is the caller's: a workload allows fewer. podName is the pod's, "" for a template.
func ValidatePodSpec(spec *corev1.PodSpec, podName string, path *field.Path, names sets.Set[string]) field.ErrorList {
	errs := ValidateVolumes(spec.Volumes, podName, path.Child("volumes"))
	errs = append(errs, validatePodSpecContainers(spec, path, names)...)
	errs = append(errs, validatePodDNS(spec, path)...)
	if sc := spec.SecurityContext; sc != nil {
		errs = append(errs, validateSysctls(sc.Sysctls, spec.HostNetwork, spec.HostIPC, path.Child("securityContext", "sysctls"))...)
	}
	return append(errs, validatePodSpecFields(spec, path)...)
}

// The pod-level checks of kube's ValidatePodSpec (pkg/apis/core/validation/validation.go)
// other than the containers' and the DNS ones, in kube's field paths and words.

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// ValidateVolumes is kube's ValidateVolumes: each volume named by a DNS label, once, and
// of exactly one valid source. podName is the pod's, "" for a template.
func ValidateVolumes(volumes []corev1.Volume, podName string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, v := range volumes {
		p := path.Index(i)
		errs = append(errs, validateVolumeSource(&v.VolumeSource, p)...)
		if v.Ephemeral != nil && podName != "" && v.Name != "" {
			// The claim the ephemeral volume controller will make must be a valid name.
			claim := podName + "-" + v.Name
			for _, msg := range validation.NameIsDNSSubdomain(claim, false) {
				errs = append(errs, field.Invalid(p.Child("name"), v.Name, fmt.Sprintf("PVC name %q: %v", claim, msg)))
			}
		}
		namePath := p.Child("name")
		if v.Name == "" {
			errs = append(errs, field.Required(namePath, ""))
		} else {
			errs = append(errs, DNSLabel(v.Name, namePath)...)
		}
		if names.Has(v.Name) {
			errs = append(errs, field.Duplicate(namePath, v.Name))
		}
		names.Insert(v.Name)
	}
	return errs
}

// volumeSourceFields are a volume's sources in the order kube checks them, each under
// the field name its "more than 1 volume type" error carries (kube's spelling, typos
// included).
func volumeSourceFields(s *corev1.VolumeSource) []struct {
	name string
	set  bool
} {
	return []struct {
		name string
		set  bool
	}{
		{"emptyDir", s.EmptyDir != nil}, {"hostPath", s.HostPath != nil}, {"gitRepo", s.GitRepo != nil},
		{"gcePersistentDisk", s.GCEPersistentDisk != nil}, {"awsElasticBlockStore", s.AWSElasticBlockStore != nil},
		{"secret", s.Secret != nil}, {"nfs", s.NFS != nil}, {"iscsi", s.ISCSI != nil}, {"glusterfs", s.Glusterfs != nil},
		{"flocker", s.Flocker != nil}, {"persistentVolumeClaim", s.PersistentVolumeClaim != nil}, {"rbd", s.RBD != nil},
		{"cinder", s.Cinder != nil}, {"cephFS", s.CephFS != nil}, {"quobyte", s.Quobyte != nil},
		{"downwarAPI", s.DownwardAPI != nil}, {"fc", s.FC != nil}, {"flexVolume", s.FlexVolume != nil},
		{"configMap", s.ConfigMap != nil}, {"azureFile", s.AzureFile != nil}, {"vsphereVolume", s.VsphereVolume != nil},
		{"photonPersistentDisk", s.PhotonPersistentDisk != nil}, {"portworxVolume", s.PortworxVolume != nil},
		{"azureDisk", s.AzureDisk != nil}, {"storageos", s.StorageOS != nil}, {"projected", s.Projected != nil},
		{"scaleIO", s.ScaleIO != nil}, {"csi", s.CSI != nil}, {"ephemeral", s.Ephemeral != nil}, {"image", s.Image != nil},
	}
}

// validateVolumeSource is kube's validateVolumeSource: the first source set is checked,
// every further one refused; the sources minilet mounts (and nfs, csi) get kube's checks.
func validateVolumeSource(s *corev1.VolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	first := ""
	for _, f := range volumeSourceFields(s) {
		switch {
		case !f.set:
		case first != "":
			errs = append(errs, field.Forbidden(path.Child(f.name), "may not specify more than 1 volume type"))
		default:
			first = f.name
		}
	}
	switch first {
	case "":
		return append(errs, field.Required(path, "must specify a volume type"))
	case "emptyDir":
		if l := s.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			errs = append(errs, field.Forbidden(path.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case "hostPath":
		errs = append(errs, ValidateHostPathSource(s.HostPath, path.Child("hostPath"))...)
	case "secret":
		p := path.Child("secret")
		if s.Secret.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secretName"), ""))
		}
		errs = append(errs, validateFileMode(s.Secret.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeysToPaths(s.Secret.Items, p.Child("items"))...)
	case "configMap":
		p := path.Child("configMap")
		if s.ConfigMap.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		errs = append(errs, validateFileMode(s.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeysToPaths(s.ConfigMap.Items, p.Child("items"))...)
	case "nfs":
		p := path.Child("nfs")
		if s.NFS.Server == "" {
			errs = append(errs, field.Required(p.Child("server"), ""))
		}
		if s.NFS.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		if !strings.HasPrefix(s.NFS.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("path"), s.NFS.Path, "must be an absolute path"))
		}
	case "persistentVolumeClaim":
		if s.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(path.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case "downwarAPI":
		p := path.Child("downwardAPI")
		errs = append(errs, validateFileMode(s.DownwardAPI.DefaultMode, p.Child("defaultMode"))...)
		for _, file := range s.DownwardAPI.Items {
			// kube reports an item's errors under the source, not under its index.
			errs = append(errs, validateDownwardAPIFile(&file, p)...)
		}
	case "projected":
		errs = append(errs, validateProjectedSource(s.Projected, path.Child("projected"))...)
	case "csi":
		p := path.Child("csi")
		errs = append(errs, ValidateDriverName(s.CSI.Driver, p.Child("driver"))...)
		if ref := s.CSI.NodePublishSecretRef; ref != nil {
			if ref.Name == "" {
				errs = append(errs, field.Required(p.Child("nodePublishSecretRef", "name"), ""))
			} else {
				errs = append(errs, InvalidEach(p.Child("name"), ref.Name, utilvalidation.IsDNS1123Subdomain(ref.Name))...)
			}
		}
	case "ephemeral":
		p := path.Child("ephemeral", "volumeClaimTemplate")
		if t := s.Ephemeral.VolumeClaimTemplate; t == nil {
			errs = append(errs, field.Required(p, ""))
		} else {
			errs = append(errs, ValidateClaimSpec(&t.Spec, p.Child("spec"))...)
		}
	case "image":
		if pp := s.Image.PullPolicy; pp != "" && pp != corev1.PullAlways && pp != corev1.PullIfNotPresent && pp != corev1.PullNever {
			errs = append(errs, field.NotSupported(path.Child("image", "pullPolicy"), pp,
				[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
		}
	}
	return errs
}

// hostPathTypes are the supported hostPath types, sorted as kube lists them.
var hostPathTypes = []corev1.HostPathType{corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev,
	corev1.HostPathDirectory, corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket}

// ValidateHostPathSource checks a pod volume's or PersistentVolume's hostPath as kube does.
func ValidateHostPathSource(h *corev1.HostPathVolumeSource, path *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(path.Child("path"), "")}
	}
	errs := NoBacksteps(h.Path, path.Child("path"))
	if t := h.Type; t != nil && !sets.New(hostPathTypes...).Has(*t) {
		errs = append(errs, field.NotSupported(path.Child("type"), *t, hostPathTypes))
	}
	return errs
}

func validateFileMode(mode *int32, path *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(path, *mode, fileModeErrorMsg)}
	}
	return nil
}

// validateKeysToPaths is kube's validateKeyToPath for each item of a secret or configMap.
func validateKeysToPaths(items []corev1.KeyToPath, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, kp := range items {
		p := path.Index(i)
		if kp.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		if kp.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(kp.Path, p.Child("path"))...)
		errs = append(errs, validateFileMode(kp.Mode, p.Child("mode"))...)
	}
	return errs
}

// validateLocalNonReservedPath is kube's: relative, no '..' element, not starting with '..'
// (which the kubelet keeps for its own files).
func validateLocalNonReservedPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	errs = append(errs, NoBacksteps(target, p)...)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

// volumeFieldPaths are the pod fields a downwardAPI volume file may hold, sorted.
var volumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// validateDownwardAPIFile is kube's validateDownwardAPIVolumeFile.
func validateDownwardAPIFile(file *corev1.DownwardAPIVolumeFile, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if file.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(file.Path, path.Child("path"))...)
	switch {
	case file.FieldRef != nil:
		errs = append(errs, validateFieldRef(file.FieldRef, volumeFieldPaths, path.Child("fieldRef"))...)
		if file.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case file.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldRef(file.ResourceFieldRef, path.Child("resourceFieldRef"), true)...)
	default:
		errs = append(errs, field.Required(path, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(file.Mode, path.Child("mode"))...)
}

// validateProjectedSource is kube's validateProjectedVolumeSource for the secret,
// configMap, downwardAPI and serviceAccountToken sources, one per entry, each path once.
func validateProjectedSource(p *corev1.ProjectedVolumeSource, path *field.Path) field.ErrorList {
	errs := validateFileMode(p.DefaultMode, path.Child("defaultMode"))
	paths := sets.New[string]()
	// kube names the source's name (or the path) as the duplicate's value.
	once := func(file, value string) {
		if file == "" {
			return
		}
		if paths.Has(file) {
			errs = append(errs, field.Invalid(path, value, "conflicting duplicate paths"))
		}
		paths.Insert(file)
	}
	// A secret or a configMap source: named, its items valid, each item's path once.
	keyed := func(name string, items []corev1.KeyToPath, path *field.Path) {
		if name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		}
		errs = append(errs, validateKeysToPaths(items, path.Child("items"))...)
		for _, kp := range items {
			once(kp.Path, name)
		}
	}
	for i, src := range p.Sources {
		srcPath := path.Child("sources").Index(i)
		n := 0
		if s := src.Secret; s != nil {
			n++
			keyed(s.Name, s.Items, srcPath.Child("secret"))
		}
		if c := src.ConfigMap; c != nil {
			n++
			keyed(c.Name, c.Items, srcPath.Child("configMap"))
		}
		if d := src.DownwardAPI; d != nil {
			n++
			for _, file := range d.Items {
				errs = append(errs, validateDownwardAPIFile(&file, srcPath.Child("downwardAPI"))...)
				once(file.Path, file.Path)
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			tokenPath := srcPath.Child("serviceAccountToken")
			if s := t.ExpirationSeconds; s != nil && *s < 10*60 {
				errs = append(errs, field.Invalid(tokenPath.Child("expirationSeconds"), *s, "may not specify a duration less than 10 minutes"))
			} else if s != nil && *s > 1<<32 {
				errs = append(errs, field.Invalid(tokenPath.Child("expirationSeconds"), *s, "may not specify a duration larger than 2^32 seconds"))
			}
			// kube words a token's path errors under the projected volume's path.
			if t.Path == "" {
				errs = append(errs, field.Required(path.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(t.Path, path.Child("path"))...)
			}
		}
		if src.ClusterTrustBundle != nil {
			n++
		}
		if src.PodCertificate != nil {
			n++
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// tolerationOperators are what a toleration's operator may be; kube names Lt and Gt too,
// behind their alpha gate.
var tolerationOperators = []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}

// ValidateTolerations is kube's (the alpha Lt and Gt operators refused, as with their gate
// off).
func ValidateTolerations(tolerations []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := path.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := utilvalidation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		case corev1.TolerationOpLt, corev1.TolerationOpGt:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator,
				append(tolerationOperators, corev1.TolerationOpLt, corev1.TolerationOpGt)))
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, tolerationOperators))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect,
				[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return errs
}

// validatePodSpecFields are kube's ValidatePodSpec checks of a pod's scheduling and
// identity fields, in its order: before the DNS config (nodeSelector, security context,
// readiness and scheduling gates) and after it.
func validatePodSpecFields(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(spec.NodeSelector, path.Child("nodeSelector"))
	errs = append(errs, validatePodSecurityContext(spec, path.Child("securityContext"))...)
	errs = append(errs, validateAffinity(spec.Affinity, path.Child("affinity"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, metav1validation.ValidateLabelName(string(g.ConditionType), path.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	gates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		p := path.Child("schedulingGates").Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(g.Name, p)...)
		if gates.Has(g.Name) {
			errs = append(errs, field.Duplicate(p, g.Name))
		}
		gates.Insert(g.Name)
	}
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, path.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateHostUsers(spec, path)...)
	errs = append(errs, validateHostnameOverride(spec, path)...)
	if n := spec.ServiceAccountName; n != "" {
		errs = append(errs, InvalidEach(path.Child("serviceAccountName"), n, validation.ValidateServiceAccountName(n, false))...)
	}
	if n := spec.NodeName; n != "" {
		errs = append(errs, InvalidEach(path.Child("nodeName"), n, validation.NameIsDNSSubdomain(n, false))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, utilvalidation.InclusiveRangeError(1, math.MaxInt32)))
	}
	errs = append(errs, ValidateTolerations(spec.Tolerations, path.Child("tolerations"))...)
	for i, a := range spec.HostAliases {
		p := path.Child("hostAliases").Index(i)
		errs = append(errs, utilvalidation.IsValidIPForLegacyField(p.Child("ip"), a.IP, true, nil)...)
		for j, h := range a.Hostnames {
			errs = append(errs, InvalidEach(p.Child("hostnames").Index(j), h, utilvalidation.IsDNS1123Subdomain(h))...)
		}
	}
	if n := spec.PriorityClassName; n != "" {
		errs = append(errs, InvalidEach(path.Child("priorityClassName"), n, validation.NameIsDNSSubdomain(n, false))...)
	}
	if n := spec.RuntimeClassName; n != nil {
		errs = append(errs, InvalidEach(path.Child("runtimeClassName"), *n, validation.NameIsDNSSubdomain(*n, false))...)
	}
	switch p := spec.PreemptionPolicy; {
	case p == nil, *p == corev1.PreemptLowerPriority, *p == corev1.PreemptNever:
	case *p == "":
		errs = append(errs, field.Required(path.Child("preemptionPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("preemptionPolicy"), *p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
	}
	errs = append(errs, validatePodResources(spec, path.Child("resources"))...)
	if spec.Overhead != nil {
		errs = append(errs, ValidateOverhead(spec.Overhead, path.Child("overhead"))...)
	}
	if spec.OS != nil {
		errs = append(errs, validateOS(spec, path)...)
	}
	return errs
}

// validatePodResources is kube's for pod-level resources: not on a windows pod, no
// claims, and the names and quantities pod-level resources may hold.
func validatePodResources(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	r := spec.Resources
	switch {
	case r == nil:
		return nil
	case spec.OS != nil && spec.OS.Name == corev1.Windows:
		return field.ErrorList{field.Forbidden(path, "may not be set for a windows pod")}
	}
	var errs field.ErrorList
	if r.Claims != nil {
		errs = append(errs, field.Forbidden(path.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	errs = append(errs, validateResourceRequirements(r, validatePodResourceName, path)...)
	return append(errs, validatePodResourceConsistency(spec, path)...)
}

// validatePodResourceConsistency is kube's: pod-level requests at least what the
// containers ask together, hugepages limits at least theirs together, and no container
// limited above the pod (kube's path for the last, containers under resources, kept).
func validatePodResourceConsistency(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	pod := &corev1.Pod{Spec: *spec}
	requests := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		if sum, set, ok := requests[name], spec.Resources.Requests[name], HasKey(spec.Resources.Requests, name); ok && sum.Cmp(set) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), set.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", sum.String())))
		}
	}
	limits := resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		if sum, set, ok := limits[name], spec.Resources.Limits[name], HasKey(spec.Resources.Limits, name); ok && resourcename.IsHugePages(name) && sum.Cmp(set) > 0 {
			errs = append(errs, field.Invalid(path.Child("limits").Key(string(name)), set.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", sum.String())))
		}
	}
	for i, c := range spec.Containers {
		for _, name := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
			if limit, set, ok := c.Resources.Limits[name], spec.Resources.Limits[name], HasKey(spec.Resources.Limits, name); ok && limit.Cmp(set) > 0 {
				errs = append(errs, field.Invalid(path.Child("containers").Index(i).Key(string(name)).Child("limits"), limit.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", set.String())))
			}
		}
	}
	return errs
}

// fsGroupChangePolicies are the supported policies, sorted as kube lists them.
var fsGroupChangePolicies = []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}

// validatePodSecurityContext is kube's validatePodSpecSecurityContext for the user and
// group ids, the process namespace (which kube's internal type keeps in the security
// context) and the fsGroup policy; the sysctls are validateSysctls'.
func validatePodSecurityContext(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	var errs field.ErrorList
	if g := sc.FSGroup; g != nil {
		errs = append(errs, InvalidEach(path.Child("fsGroup"), *g, utilvalidation.IsValidGroupID(*g))...)
	}
	if u := sc.RunAsUser; u != nil {
		errs = append(errs, InvalidEach(path.Child("runAsUser"), *u, utilvalidation.IsValidUserID(*u))...)
	}
	if g := sc.RunAsGroup; g != nil {
		errs = append(errs, InvalidEach(path.Child("runAsGroup"), *g, utilvalidation.IsValidGroupID(*g))...)
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, InvalidEach(path.Child("supplementalGroups").Index(i), g, utilvalidation.IsValidGroupID(g))...)
	}
	if s := spec.ShareProcessNamespace; s != nil && *s && spec.HostPID {
		errs = append(errs, field.Invalid(path.Child("shareProcessNamespace"), *s, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	if p := sc.FSGroupChangePolicy; p != nil && !slices.Contains(fsGroupChangePolicies, *p) {
		errs = append(errs, field.NotSupported(path.Child("fsGroupChangePolicy"), *p, fsGroupChangePolicies))
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	return append(errs, validateAppArmorProfile(sc.AppArmorProfile, path.Child("appArmorProfile"))...)
}
