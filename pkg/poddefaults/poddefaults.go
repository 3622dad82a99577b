// Package poddefaults applies Kubernetes' defaults to a pod spec: miniapi does at create,
// minilet does for the static pods it reads from files.
package poddefaults

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// TerminationGracePeriod is Kubernetes' default for spec.terminationGracePeriodSeconds.
const TerminationGracePeriod int64 = 30

// Pod applies the defaults kube-apiserver gives a pod (k8s.io/api has none of its own).
func Pod(p *corev1.Pod) {
	s := &p.Spec
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
	if s.EnableServiceLinks == nil {
		t := true
		s.EnableServiceLinks = &t
	}
	if s.ServiceAccountName == "" && s.DeprecatedServiceAccount != "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	if s.Priority == nil {
		var zero int32
		s.Priority = &zero
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
	// A limit without a request requests the limit.
	for name, limit := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[name] = limit.DeepCopy()
		}
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
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
