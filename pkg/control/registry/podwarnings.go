package registry

import (
	"fmt"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kube-apiserver's warnings on pods and pod templates (pkg/api/pod/warnings.go and its
// helpers in pkg/api/node and pkg/api/persistentvolumeclaim), in its order and words.

// deprecatedNodeLabels are kube's (pkg/api/node), with the message of each.
var deprecatedNodeLabels = map[string]string{
	`beta.kubernetes.io/arch`:                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	`beta.kubernetes.io/os`:                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	`failure-domain.beta.kubernetes.io/region`:      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	`failure-domain.beta.kubernetes.io/zone`:        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	`beta.kubernetes.io/instance-type`:              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	`app.kubernetes.io/created-by`:                  `deprecated since v1.9`,
	`scheduler.alpha.kubernetes.io/preferAvoidPods`: `deprecated since v1.22; use Taints and Tolerations instead`,
	`node-role.kubernetes.io/master`:                `use "node-role.kubernetes.io/control-plane" instead`,
}

// NodeLabelDeprecatedMessage is kube's GetNodeLabelDeprecatedMessage.
func NodeLabelDeprecatedMessage(key string) (string, bool) {
	msg, ok := deprecatedNodeLabels[key]
	return msg, ok
}

// NodeSelectorTermWarnings is kube's GetWarningsForNodeSelectorTerm: deprecated keys and,
// for a preferred term, values that are not label values.
func NodeSelectorTermWarnings(term corev1.NodeSelectorTerm, checkLabelValue bool, path *field.Path) []string {
	var out []string
	for i, expr := range term.MatchExpressions {
		if msg, deprecated := NodeLabelDeprecatedMessage(expr.Key); deprecated {
			out = append(out, fmt.Sprintf("%s: %s is %s", path.Child("matchExpressions").Index(i).Child("key"), expr.Key, msg))
		}
		if checkLabelValue {
			for k, value := range expr.Values {
				for _, msg := range utilvalidation.IsValidLabelValue(value) {
					out = append(out, fmt.Sprintf("%s: %s is invalid, %s", path.Child("matchExpressions").Index(i).Child("values").Index(k), value, msg))
				}
			}
		}
	}
	return out
}

// NodeSelectorWarnings is kube's GetWarningsForNodeSelector: deprecated node labels in a
// label selector's expressions, then its matchLabels (in key order: kube's follows a map's).
func NodeSelectorWarnings(sel *metav1.LabelSelector, path *field.Path) []string {
	if sel == nil {
		return nil
	}
	var out []string
	for i, expr := range sel.MatchExpressions {
		if msg, deprecated := NodeLabelDeprecatedMessage(expr.Key); deprecated {
			out = append(out, fmt.Sprintf("%s: %s is %s", path.Child("matchExpressions").Index(i).Child("key"), expr.Key, msg))
		}
	}
	for _, key := range sets.List(sets.KeySet(sel.MatchLabels)) {
		if msg, deprecated := NodeLabelDeprecatedMessage(key); deprecated {
			out = append(out, fmt.Sprintf("%s: %s", path.Child("matchLabels").Child(key), msg))
		}
	}
	return out
}

// fractionalBytes is kube's warning on a memory or storage quantity with a fraction of a byte.
func fractionalBytes(rl corev1.ResourceList, name corev1.ResourceName, path *field.Path) []string {
	if v, ok := rl[name]; ok && v.MilliValue()%1000 != 0 {
		return []string{fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", path.Key(string(name)), v.String())}
	}
	return nil
}

// PVCSpecWarnings is kube's GetWarningsForPersistentVolumeClaimSpec.
func PVCSpecWarnings(path *field.Path, spec corev1.PersistentVolumeClaimSpec) []string {
	// kube reads the quantities even when absent, and a zero one has no fraction
	out := fractionalBytes(spec.Resources.Requests, corev1.ResourceStorage, path.Child("resources", "requests"))
	return append(out, fractionalBytes(spec.Resources.Limits, corev1.ResourceStorage, path.Child("resources", "limits"))...)
}

// WorkloadNameWarnings is the warning of kube's workload strategies on a name that is not
// a DNS label, on create (old is nil) only.
func WorkloadNameWarnings(name string, old runtime.Object) []string {
	if old != nil {
		return nil
	}
	if msgs := utilvalidation.IsDNS1123Label(name); len(msgs) != 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}

// PodWarnings are kube's pod strategy's WarningsOnCreate.
func PodWarnings(pod *corev1.Pod) []string {
	var out []string
	if msgs := utilvalidation.IsDNS1123Label(pod.Name); len(msgs) != 0 {
		out = append(out, fmt.Sprintf("metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(out, podSpecAndMetaWarnings(nil, &pod.Spec, &pod.ObjectMeta)...)
}

// PodTemplateWarnings is kube's GetWarningsForPodTemplate; path is the template's.
func PodTemplateWarnings(t *corev1.PodTemplateSpec, path *field.Path) []string {
	return podSpecAndMetaWarnings(path, &t.Spec, &t.ObjectMeta)
}

var deprecatedPodAnnotations = []struct{ key, message string }{
	{`scheduler.alpha.kubernetes.io/critical-pod`, `non-functional in v1.16+; use the "priorityClassName" field instead`},
	{`security.alpha.kubernetes.io/sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
	{`security.alpha.kubernetes.io/unsafe-sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
}

// podSpecAndMetaWarnings is kube's warningsForPodSpecAndMeta; path is nil for a pod.
func podSpecAndMetaWarnings(path *field.Path, spec *corev1.PodSpec, meta *metav1.ObjectMeta) []string {
	var out []string
	warn := func(p fmt.Stringer, msg string) { out = append(out, fmt.Sprintf("%s: %s", p, msg)) }
	specPath := path.Child("spec")

	for k := range spec.NodeSelector {
		if msg, deprecated := NodeLabelDeprecatedMessage(k); deprecated {
			warn(specPath.Child("nodeSelector").Key(k), msg)
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		n := a.NodeAffinity
		if n.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			p := specPath.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			for i, term := range n.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				out = append(out, NodeSelectorTermWarnings(term, false, p.Index(i))...)
			}
		}
		p := specPath.Child("affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range n.PreferredDuringSchedulingIgnoredDuringExecution {
			out = append(out, NodeSelectorTermWarnings(term.Preference, true, p.Index(i).Child("preference"))...)
		}
	}
	for i, t := range spec.TopologySpreadConstraints {
		p := specPath.Child("topologySpreadConstraints").Index(i)
		if msg, deprecated := NodeLabelDeprecatedMessage(t.TopologyKey); deprecated {
			warn(p.Child("topologyKey"), fmt.Sprintf("%s is %s", t.TopologyKey, msg))
		}
		if t.LabelSelector == nil {
			warn(p.Child("labelSelector"), "a null labelSelector results in matching no pod")
		}
	}

	annotations := path.Child("metadata", "annotations")
	for _, d := range deprecatedPodAnnotations {
		if hasKey(meta.Annotations, d.key) {
			warn(annotations.Key(d.key), d.message)
		}
	}

	for i, v := range spec.Volumes {
		p := specPath.Child("volumes").Index(i)
		switch {
		case v.PhotonPersistentDisk != nil:
			warn(p.Child("photonPersistentDisk"), "deprecated in v1.11, non-functional in v1.16+")
		case v.GitRepo != nil: // the GitRepoVolumeDriver gate is locked off in v1.36
			warn(p.Child("gitRepo"), "deprecated in v1.11, and disabled by default in v1.33+")
		case v.ScaleIO != nil:
			warn(p.Child("scaleIO"), "deprecated in v1.16, non-functional in v1.22+")
		case v.Flocker != nil:
			warn(p.Child("flocker"), "deprecated in v1.22, non-functional in v1.25+")
		case v.StorageOS != nil:
			warn(p.Child("storageOS"), "deprecated in v1.22, non-functional in v1.25+")
		case v.Quobyte != nil:
			warn(p.Child("quobyte"), "deprecated in v1.22, non-functional in v1.25+")
		case v.Glusterfs != nil:
			warn(p.Child("glusterfs"), "deprecated in v1.25, non-functional in v1.26+")
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			out = append(out, PVCSpecWarnings(p.Child("ephemeral", "volumeClaimTemplate", "spec"), v.Ephemeral.VolumeClaimTemplate.Spec)...)
		case v.CephFS != nil:
			warn(p.Child("cephfs"), "deprecated in v1.28, non-functional in v1.31+")
		case v.RBD != nil:
			warn(p.Child("rbd"), "deprecated in v1.28, non-functional in v1.31+")
		}
	}

	out = append(out, overlappingVirtualPathWarnings(spec.Volumes)...)

	ips := sets.New[string]()
	for i, h := range spec.HostAliases {
		if ips.Has(h.IP) {
			warn(specPath.Child("hostAliases").Index(i).Child("ip"), fmt.Sprintf("duplicate ip %q", h.IP))
		}
		ips.Insert(h.IP)
	}
	secrets := sets.New[string]()
	for i, s := range spec.ImagePullSecrets {
		if secrets.Has(s.Name) {
			warn(specPath.Child("imagePullSecrets").Index(i).Child("name"), fmt.Sprintf("duplicate name %q", s.Name))
		}
		secrets.Insert(s.Name)
	}
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			warn(specPath.Child("imagePullSecrets").Index(i).Child("name"), `invalid empty name ""`)
		}
	}

	out = append(out, fractionalBytes(spec.Overhead, corev1.ResourceMemory, specPath.Child("overhead"))...)
	out = append(out, fractionalBytes(spec.Overhead, corev1.ResourceEphemeralStorage, specPath.Child("overhead"))...)

	const seccompMsg = `non-functional in v1.27+; use the "seccompProfile" field instead`
	var podAppArmor *corev1.AppArmorProfile
	if sc := spec.SecurityContext; sc != nil {
		podAppArmor = sc.AppArmorProfile
	}
	if spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil {
		if hasKey(meta.Annotations, corev1.SeccompPodAnnotationKey) {
			warn(annotations.Key(corev1.SeccompPodAnnotationKey), seccompMsg)
		}
	}
	containers := corevalidation.Containers(spec, specPath)
	for _, c := range containers {
		p := c.Path
		if c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil {
			if key := corev1.SeccompContainerAnnotationKeyPrefix + c.Name; hasKey(meta.Annotations, key) {
				warn(annotations.Key(key), seccompMsg)
			}
		}
		// a pod's are warned of as its create turns them into fields (pods_apparmor.go); a template's here
		if path != nil && (c.SecurityContext == nil || c.SecurityContext.AppArmorProfile == nil) {
			key := corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c.Name
			if value, ok := meta.Annotations[key]; ok && corevalidation.AppArmorAnnotationDeprecated(corevalidation.AppArmorProfileOfAnnotation(value), podAppArmor) {
				warn(annotations.Key(key), `deprecated since v1.30; use the "appArmorProfile" field instead`)
			}
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			out = append(out, fractionalBytes(c.Resources.Limits, name, p.Child("resources", "limits"))...)
			out = append(out, fractionalBytes(c.Resources.Requests, name, p.Child("resources", "requests"))...)
		}
		seen := sets.New[string]()
		for i, e := range c.Env {
			if !seen.Has(e.Name) {
				seen.Insert(e.Name)
				continue
			}
			// a redefinition that builds on the previous value, X="$(X)abc", is fine
			ref := fmt.Sprintf("$(%s)", e.Name)
			if e.ValueFrom != nil || e.Value == ref || !strings.Contains(e.Value, ref) {
				warn(p.Child("env").Index(i), fmt.Sprintf("hides previous definition of %q, which may be dropped when using apply", e.Name))
			}
		}
	}

	out = append(out, portWarnings(containers)...)

	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		warn(specPath.Child("terminationGracePeriodSeconds"), "must be >= 0; negative values are invalid and will be treated as 1")
	}

	if a := spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			out = append(out, podAffinityWarnings(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, specPath.Child("affinity", "podAffinity"))...)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			out = append(out, podAffinityWarnings(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, specPath.Child("affinity", "podAntiAffinity"))...)
		}
	}

	if dc := spec.DNSConfig; dc != nil {
		for i, ns := range dc.Nameservers {
			out = append(out, utilvalidation.GetWarningsForIP(specPath.Child("dnsConfig", "nameservers").Index(i), ns)...)
		}
	}
	for i, h := range spec.HostAliases {
		out = append(out, utilvalidation.GetWarningsForIP(specPath.Child("hostAliases").Index(i).Child("ip"), h.IP)...)
	}
	return out
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// podAffinityWarnings are kube's warningsForPodAffinityTerms and
// warningsForWeightedPodAffinityTerms: a null selector matches no pod.
func podAffinityWarnings(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, path *field.Path) []string {
	var out []string
	const msg = "a null labelSelector results in matching no pod"
	for i, t := range required {
		if t.LabelSelector == nil {
			out = append(out, fmt.Sprintf("%s: %s", path.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i).Child("labelSelector"), msg))
		}
	}
	for i, t := range preferred {
		if t.PodAffinityTerm.LabelSelector == nil {
			out = append(out, fmt.Sprintf("%s: %s", path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm", "labelSelector"), msg))
		}
	}
	return out
}

// portWarnings are kube's warnings on ports across all containers: a hostIP without a
// hostPort, the same port twice, and reused port names.
func portWarnings(containers []corevalidation.PathedContainer) []string {
	type portAt struct {
		path *field.Path
		port corev1.ContainerPort
	}
	var out []string
	byPort := map[string][]portAt{}
	for _, c := range containers {
		for i, port := range c.Ports {
			p := c.Path.Child("ports").Index(i)
			if port.HostIP != "" && port.HostPort == 0 {
				out = append(out, fmt.Sprintf("%s: hostIP set without hostPort: %+v", p, port))
			}
			k := fmt.Sprintf("%d/%s", port.ContainerPort, port.Protocol)
			for _, other := range byPort[k] {
				a, b := port.HostIP == "", other.port.HostIP == ""
				switch {
				case port.HostIP == other.port.HostIP && port.HostPort == other.port.HostPort:
					out = append(out, fmt.Sprintf("%s: duplicate port definition with %s", p, other.path))
				case port.HostPort == 0 || other.port.HostPort == 0:
					out = append(out, fmt.Sprintf("%s: overlapping port definition with %s", p, other.path))
				case port.HostPort == other.port.HostPort && a != b:
					out = append(out, fmt.Sprintf("%s: dangerously ambiguous port definition with %s", p, other.path))
				}
			}
			byPort[k] = append(byPort[k], portAt{p, port})
		}
	}
	names := map[string]*field.Path{}
	for _, c := range containers {
		for i, port := range c.Ports {
			if port.Name == "" {
				continue
			}
			p := c.Path.Child("ports").Index(i)
			if other, ok := names[port.Name]; ok {
				out = append(out, fmt.Sprintf("%s: duplicate port name %q with %s, services and probes that select ports by name will use %s", p, port.Name, other, other))
			} else {
				names[port.Name] = p
			}
		}
	}
	return out
}

// pathAndSource is a file a volume projects, and what it comes from.
type pathAndSource struct{ path, source string }

func (ps pathAndSource) String() string {
	if ps.source != "" {
		return fmt.Sprintf("%q (%s)", ps.path, ps.source)
	}
	return fmt.Sprintf("%q", ps.path)
}

func keyPaths(items []corev1.KeyToPath, source string) []pathAndSource {
	out := make([]pathAndSource, 0, len(items))
	for _, it := range items {
		out = append(out, pathAndSource{it.Path, source})
	}
	return out
}

func downwardAPIPaths(items []corev1.DownwardAPIVolumeFile, source string) []pathAndSource {
	out := make([]pathAndSource, 0, len(items))
	for _, it := range items {
		out = append(out, pathAndSource{it.Path, source})
	}
	return out
}

// overlappingVirtualPathWarnings is kube's warningsForOverlappingVirtualPaths: two files
// of one volume at the same path, or one inside the other.
func overlappingVirtualPathWarnings(volumes []corev1.Volume) []string {
	var out []string
	warn := func(v corev1.Volume, desc, body string) {
		out = append(out, fmt.Sprintf("volume %q (%s): overlapping paths: %s", v.Name, desc, body))
	}
	for _, v := range volumes {
		if v.ConfigMap != nil && v.ConfigMap.Items != nil {
			for _, ol := range pathOverlaps(keyPaths(v.ConfigMap.Items, "")) {
				warn(v, fmt.Sprintf("ConfigMap %q", v.ConfigMap.Name), ol)
			}
		}
		if v.Secret != nil && v.Secret.Items != nil {
			for _, ol := range pathOverlaps(keyPaths(v.Secret.Items, "")) {
				warn(v, fmt.Sprintf("Secret %q", v.Secret.SecretName), ol)
			}
		}
		if v.DownwardAPI != nil && v.DownwardAPI.Items != nil {
			for _, ol := range pathOverlaps(downwardAPIPaths(v.DownwardAPI.Items, "")) {
				warn(v, "DownwardAPI", ol)
			}
		}
		if v.Projected == nil {
			continue
		}
		var sources []pathAndSource
		for _, s := range v.Projected.Sources {
			if s == (corev1.VolumeProjection{}) {
				out = append(out, fmt.Sprintf("volume %q (Projected) has no sources provided", v.Name))
				continue
			}
			switch {
			case s.ConfigMap != nil && s.ConfigMap.Items != nil:
				sources = append(sources, keyPaths(s.ConfigMap.Items, fmt.Sprintf("ConfigMap %q", s.ConfigMap.Name))...)
			case s.Secret != nil && s.Secret.Items != nil:
				sources = append(sources, keyPaths(s.Secret.Items, fmt.Sprintf("Secret %q", s.Secret.Name))...)
			case s.DownwardAPI != nil && s.DownwardAPI.Items != nil:
				sources = append(sources, downwardAPIPaths(s.DownwardAPI.Items, "DownwardAPI")...)
			case s.ServiceAccountToken != nil:
				sources = append(sources, pathAndSource{s.ServiceAccountToken.Path, "ServiceAccountToken"})
			case s.ClusterTrustBundle != nil:
				name := s.ClusterTrustBundle.SignerName
				if s.ClusterTrustBundle.Name != nil {
					name = s.ClusterTrustBundle.Name
				}
				sources = append(sources, pathAndSource{s.ClusterTrustBundle.Path, fmt.Sprintf("ClusterTrustBundle %q", *name)})
			case s.PodCertificate != nil:
				pc := s.PodCertificate
				for _, f := range []pathAndSource{{pc.CertificateChainPath, "PodCertificate chain"}, {pc.KeyPath, "PodCertificate key"}, {pc.CredentialBundlePath, "PodCertificate credential bundle"}} {
					if f.path != "" {
						sources = append(sources, f)
					}
				}
			}
		}
		for _, ol := range pathOverlaps(sources) {
			warn(v, "Projected", ol)
		}
	}
	return out
}

// pathOverlaps is kube's checkVolumeMappingForOverlap: each path against those before it.
func pathOverlaps(paths []pathAndSource) []string {
	var out []string
	var seen []pathAndSource
	for _, ps := range paths {
		ps.path = strings.TrimRight(ps.path, "/")
		if ps.path != "" {
			for _, item := range seen {
				if item.path != "" && (item == ps || strings.HasPrefix(item.path+"/", ps.path+"/") || strings.HasPrefix(ps.path+"/", item.path+"/")) {
					out = append(out, fmt.Sprintf("%s with %s", ps, item))
				}
			}
		}
		seen = append(seen, ps)
	}
	return out
}
