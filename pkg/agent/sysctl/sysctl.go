// Package sysctl admits pods by the sysctls they set, as the kubelet's sysctl
// allowlist does, and gives the sandbox the sysctls to set.
package sysctl

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ForbiddenReason is the kubelet's reason for a pod rejected for its sysctls.
const ForbiddenReason = "SysctlForbidden"

// safe are the kubelet's safe sysctls (pkg/kubelet/sysctl/safe_sysctls.go, v1.36): each
// is namespaced and cannot starve the node or other pods. Others are refused (the
// kubelet's --allowed-unsafe-sysctls is not offered).
var safe = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// Admission refuses a pod that sets a sysctl not allowlisted or one of a namespace it
// shares with the node, as the kubelet: Failed, SysctlForbidden, "forbidden sysctl: ...".
type Admission struct{}

func (Admission) Admit(pod *corev1.Pod) (ok bool, reason, message string) {
	for _, s := range sysctlsOf(pod) {
		if err := validate(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return false, ForbiddenReason, "forbidden sysctl: " + err.Error()
		}
	}
	return true, "", ""
}

func validate(name string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	for _, allowed := range safe {
		if name != allowed {
			continue
		}
		switch ns, _, _ := utilsysctl.GetNamespace(name); {
		case ns == utilsysctl.IPCNamespace && hostIPC:
			return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
		case ns == utilsysctl.NetNamespace && hostNet:
			return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
		}
		return nil
	}
	return fmt.Errorf("%q not allowlisted", name)
}

// Sandbox is the sysctls pod sets, by their dotted names, for its sandbox.
func Sandbox(pod *corev1.Pod) map[string]string {
	list := sysctlsOf(pod)
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]string, len(list))
	for _, s := range list {
		out[utilsysctl.NormalizeName(s.Name)] = strings.TrimSpace(s.Value)
	}
	return out
}

func sysctlsOf(pod *corev1.Pod) []corev1.Sysctl {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.Sysctls
}
