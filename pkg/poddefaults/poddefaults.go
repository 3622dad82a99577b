// Package poddefaults applies Kubernetes' defaults to a pod spec: miniapi does at create,
// minilet does for the static pods it reads from files.
package poddefaults

import (
	"cmp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/internal/resourcename"
)

// TerminationGracePeriod is Kubernetes' default for spec.terminationGracePeriodSeconds.
const TerminationGracePeriod int64 = 30

// Pod applies the defaults kube-apiserver gives a pod (k8s.io/api has none of its own):
// those of every pod spec (PodSpec) and those only a pod gets, as SetDefaults_Pod in
// k8s.io/kubernetes/pkg/apis/core/v1: requests default to limits (the containers' and then
// the pod-level ones'), enableServiceLinks, and with hostNetwork a container port's hostPort
// is its containerPort.
func Pod(p *corev1.Pod) {
	s := &p.Spec
	PodSpec(s)
	for i := range s.InitContainers {
		requestsFromLimits(&s.InitContainers[i])
	}
	for i := range s.Containers {
		requestsFromLimits(&s.Containers[i])
	}
	// After the containers' own, as kube's (PodLevelResources, on by default).
	podLevelHugePagesLimits(p)
	podLevelRequests(p)
	if s.EnableServiceLinks == nil {
		t := corev1.DefaultEnableServiceLinks
		s.EnableServiceLinks = &t
	}
	if s.Priority == nil {
		var zero int32
		s.Priority = &zero
	}
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for i := range statuses {
			ResourceList(statuses[i].AllocatedResources)
			resources(statuses[i].Resources)
		}
	}
	ResourceList(p.Status.AllocatedResources)
	resources(p.Status.Resources)
	if s.HostNetwork {
		for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if cs[i].Ports[j].HostPort == 0 {
						cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
					}
				}
			}
		}
	}
}

// PodSpec applies the defaults every pod spec gets, a pod's or a pod template's (Deployment,
// Job, ...), as kube-apiserver's generated defaulters: SetDefaults_PodSpec, and those of
// its volumes, containers, probes, lifecycle handlers and field selectors.
func PodSpec(s *corev1.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := TerminationGracePeriod
		s.TerminationGracePeriodSeconds = &g
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.ServiceAccountName == "" && s.DeprecatedServiceAccount != "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	for i := range s.Volumes {
		volume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		container(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		container((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
	}
	ResourceList(s.Overhead)
	resources(s.Resources)
}

// ResourceList is kube's SetDefaults_ResourceList: every quantity rounded up to the milli
// scale (100u becomes 1m), as kube-apiserver stores a resource list of the core, apps,
// batch and storage kinds.
func ResourceList(l corev1.ResourceList) {
	for name, q := range l {
		q.RoundUp(-3) // a value already at that scale keeps its text
		l[name] = q
	}
}

func resources(r *corev1.ResourceRequirements) {
	if r != nil {
		ResourceList(r.Limits)
		ResourceList(r.Requests)
	}
}

func volume(v *corev1.Volume) {
	src := &v.VolumeSource
	if *src == (corev1.VolumeSource{}) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if src.Image != nil && src.Image.PullPolicy == "" { // as a container's imagePullPolicy
		src.Image.PullPolicy = pullPolicy(src.Image.Reference)
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		t := corev1.HostPathUnset
		src.HostPath.Type = &t
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		m := corev1.SecretVolumeSourceDefaultMode
		src.Secret.DefaultMode = &m
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		m := corev1.ConfigMapVolumeSourceDefaultMode
		src.ConfigMap.DefaultMode = &m
	}
	if d := src.DownwardAPI; d != nil {
		if d.DefaultMode == nil {
			m := corev1.DownwardAPIVolumeSourceDefaultMode
			d.DefaultMode = &m
		}
		downwardAPIItems(d.Items)
	}
	if e := src.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		ClaimSpec(&e.VolumeClaimTemplate.Spec)
	}
	legacyVolume(src)
	if p := src.Projected; p != nil {
		if p.DefaultMode == nil {
			m := corev1.ProjectedVolumeSourceDefaultMode
			p.DefaultMode = &m
		}
		for i := range p.Sources {
			if d := p.Sources[i].DownwardAPI; d != nil {
				downwardAPIItems(d.Items)
			}
			if t := p.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				hour := int64(3600)
				t.ExpirationSeconds = &hour
			}
		}
	}
}

// legacyVolume defaults the in-tree network and cloud sources as kube's generated defaults do.
func legacyVolume(src *corev1.VolumeSource) {
	if i := src.ISCSI; i != nil && i.ISCSIInterface == "" {
		i.ISCSIInterface = "default"
	}
	if r := src.RBD; r != nil {
		r.RBDPool = cmp.Or(r.RBDPool, "rbd")
		r.RadosUser = cmp.Or(r.RadosUser, "admin")
		r.Keyring = cmp.Or(r.Keyring, "/etc/ceph/keyring")
	}
	if a := src.AzureDisk; a != nil {
		if a.CachingMode == nil {
			a.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
		}
		if a.FSType == nil {
			a.FSType = ptr.To("ext4")
		}
		if a.ReadOnly == nil {
			a.ReadOnly = ptr.To(false)
		}
		if a.Kind == nil {
			a.Kind = ptr.To(corev1.AzureSharedBlobDisk)
		}
	}
	if sc := src.ScaleIO; sc != nil {
		sc.StorageMode = cmp.Or(sc.StorageMode, "ThinProvisioned")
		sc.FSType = cmp.Or(sc.FSType, "xfs")
	}
}

func downwardAPIItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		fieldSelector(items[i].FieldRef)
	}
}

func fieldSelector(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func container(c *corev1.Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	resources(&c.Resources)
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			fieldSelector(from.FieldRef)
			if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
				f := false
				from.FileKeyRef.Optional = &f
			}
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		probe(p)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				httpGet(h.HTTPGet)
			}
		}
	}
}

// probe applies SetDefaults_Probe: a timeout of 1 s, a period of 10 s, one success and
// three failures.
func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		empty := ""
		p.GRPC.Service = &empty
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// podLevelHugePagesLimits is kube's defaultHugePagePodLimits: a pod with pod-level resources
// but no hugepages request or limit of a size its containers limit gets their sum as its limit.
func podLevelHugePagesLimits(p *corev1.Pod) {
	r := p.Spec.Resources
	if r == nil || len(r.Limits) == 0 && len(r.Requests) == 0 {
		return
	}
	for name, sum := range resourcehelper.AggregateContainerLimits(p, resourcehelper.PodResourcesOptions{}) {
		if !resourcename.IsHugePages(name) {
			continue
		}
		if _, requested := r.Requests[name]; requested {
			continue
		}
		if _, ok := r.Limits[name]; !ok {
			if r.Limits == nil {
				r.Limits = corev1.ResourceList{}
			}
			r.Limits[name] = sum.DeepCopy()
		}
	}
}

// podLevelRequests is kube's defaultPodRequests: a pod with pod-level limits requests what its
// containers request together (overcommittable resources), else its limit.
func podLevelRequests(p *corev1.Pod) {
	r := p.Spec.Resources
	if r == nil || len(r.Limits) == 0 {
		return
	}
	requests := r.Requests
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	for name, sum := range resourcehelper.AggregateContainerRequests(p, resourcehelper.PodResourcesOptions{}) {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && resourcename.OvercommitAllowed(name) {
			requests[name] = sum.DeepCopy()
		}
	}
	for name, limit := range r.Limits {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			requests[name] = limit.DeepCopy()
		}
	}
	if len(requests) > 0 {
		r.Requests = requests
	}
}

// requestsFromLimits: a limit without a request requests the limit (pods only, not templates).
func requestsFromLimits(c *corev1.Container) {
	for name, limit := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[name] = limit.DeepCopy()
		}
	}
}

// defaultPullPolicy follows Kubernetes: Always for ":latest" or an untagged image, else IfNotPresent.
func pullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if !strings.Contains(name, ":") || strings.HasSuffix(name, ":latest") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// Claim applies a claim's defaults, also a StatefulSet's claim template's: the Pending
// phase, and ClaimSpec's and the status quantities rounded.
func Claim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	ClaimSpec(&pvc.Spec)
	ResourceList(pvc.Status.Capacity)
	ResourceList(pvc.Status.AllocatedResources)
}

// ClaimSpec applies a claim spec's defaults, also one in a pod's ephemeral volume: the
// Filesystem volume mode, quantities rounded.
func ClaimSpec(s *corev1.PersistentVolumeClaimSpec) {
	if s.VolumeMode == nil {
		fs := corev1.PersistentVolumeFilesystem
		s.VolumeMode = &fs
	}
	ResourceList(s.Resources.Limits)
	ResourceList(s.Resources.Requests)
}
