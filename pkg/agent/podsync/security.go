package podsync

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// securityOf merges a container's securityContext over its pod's, as Kubernetes does.
func securityOf(pod *corev1.Pod, c *corev1.Container, seccompDir string) runtime.Security {
	var s runtime.Security
	if p := pod.Spec.SecurityContext; p != nil {
		s.Seccomp = seccompOf(p.SeccompProfile, seccompDir)
		s.RunAsUser, s.RunAsGroup = p.RunAsUser, p.RunAsGroup
		s.RunAsNonRoot = p.RunAsNonRoot != nil && *p.RunAsNonRoot
		s.SupplementalGroups = p.SupplementalGroups
		if p.FSGroup != nil { // the kubelet adds fsGroup to the supplemental groups too
			s.SupplementalGroups = append(append([]int64(nil), s.SupplementalGroups...), *p.FSGroup)
		}
	}
	sc := c.SecurityContext
	if sc == nil {
		return s
	}
	if sc.SeccompProfile != nil {
		s.Seccomp = seccompOf(sc.SeccompProfile, seccompDir)
	}
	if sc.RunAsUser != nil {
		s.RunAsUser = sc.RunAsUser
	}
	if sc.RunAsGroup != nil {
		s.RunAsGroup = sc.RunAsGroup
	}
	if sc.RunAsNonRoot != nil {
		s.RunAsNonRoot = *sc.RunAsNonRoot
	}
	s.Privileged = sc.Privileged != nil && *sc.Privileged
	s.ReadOnlyRootFS = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	s.NoNewPrivileges = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	if caps := sc.Capabilities; caps != nil {
		for _, c := range caps.Add {
			s.AddCaps = append(s.AddCaps, string(c))
		}
		for _, c := range caps.Drop {
			s.DropCaps = append(s.DropCaps, string(c))
		}
	}
	return s
}

// seccompOf is the runtime's name for a seccomp profile; Localhost profiles are files
// under seccompDir (--root-dir/seccomp, where the kubelet keeps them).
func seccompOf(p *corev1.SeccompProfile, seccompDir string) string {
	switch {
	case p == nil:
		return ""
	case p.Type == corev1.SeccompProfileTypeRuntimeDefault:
		return runtime.SeccompRuntimeDefault
	case p.Type == corev1.SeccompProfileTypeLocalhost && p.LocalhostProfile != nil:
		// A name leaving seccompDir stays inside it, so the runtime reports it missing.
		return filepath.Join(seccompDir, filepath.Clean("/"+*p.LocalhostProfile))
	}
	return ""
}

// namespacesOf are the pod's namespace choices, for its sandbox and containers alike.
func namespacesOf(pod *corev1.Pod) runtime.Namespaces {
	return runtime.Namespaces{
		HostIPC:  pod.Spec.HostIPC,
		HostPID:  pod.Spec.HostPID,
		SharePID: pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace,
	}
}
