// Package apparmor is the kubelet's AppArmor admission: minilet cannot enforce AppArmor
// profiles, so on a host without AppArmor a pod that asks for a profile is refused, as the
// kubelet refuses it there, rather than run unconfined.
package apparmor

import (
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Admission refuses a pending pod that asks for an AppArmor profile (other than
// Unconfined) when Enabled says the host has no AppArmor.
type Admission struct {
	Enabled func() bool
}

func (a Admission) Admit(pod *corev1.Pod) (ok bool, reason, message string) {
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" || !required(pod) || a.Enabled() {
		return true, "", ""
	}
	return false, "AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host"
}

// HostEnabled is whether the kernel runs AppArmor, read as the kubelet (and runc) read it.
func HostEnabled() bool {
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err != nil {
		return false
	}
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && len(b) > 1 && b[0] == 'Y'
}

// required: the pod or one of its containers sets an AppArmor profile other than
// Unconfined, in its security context or in the deprecated beta annotation.
func required(pod *corev1.Pod) bool {
	confined := func(p *corev1.AppArmorProfile) bool {
		return p != nil && p.Type != corev1.AppArmorProfileTypeUnconfined
	}
	if sc := pod.Spec.SecurityContext; sc != nil && confined(sc.AppArmorProfile) {
		return true
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
			return true
		}
	}
	for key, value := range pod.Annotations {
		if strings.HasPrefix(key, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && value != corev1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}
