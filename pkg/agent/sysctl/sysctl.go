// Package sysctl admits pods by the sysctls they set, as the kubelet's sysctl
// allowlist does, and gives the sandbox the sysctls to set.
package sysctl

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ForbiddenReason is the kubelet's reason for a pod rejected for its sysctls.
const ForbiddenReason = "SysctlForbidden"

// safe are the kubelet's safe sysctls (pkg/kubelet/sysctl/safe_sysctls.go, v1.36): each
// is namespaced and cannot starve the node or other pods. Others need
// --allowed-unsafe-sysctls.
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

// pattern is kube's sysctl pattern (policy validation's SysctlContainSlashPatternFmt): a
// sysctl name, dotted or slashed, whose last segment may end in *.
var pattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

const patternMaxLength = 253

// Admission refuses a pod that sets a sysctl not allowlisted or one of a namespace it
// shares with the node, as the kubelet: Failed, SysctlForbidden, "forbidden sysctl: ...".
type Admission struct {
	names    map[string]utilsysctl.Namespace // the safe sysctls and the unsafe ones allowed
	prefixes map[string]utilsysctl.Namespace // from allowed patterns ending in *
}

// NewAdmission allows the safe sysctls and the unsafe ones (--allowed-unsafe-sysctls:
// names, or patterns ending in *), each of which must be namespaced, as the kubelet's
// allowlist requires: a node-wide sysctl set from a pod would change every pod's node.
func NewAdmission(unsafe []string) (*Admission, error) {
	a := &Admission{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, s := range safe {
		ns, _, _ := utilsysctl.GetNamespace(s)
		a.names[s] = ns
	}
	for _, s := range unsafe {
		if len(s) > patternMaxLength || !pattern.MatchString(s) {
			return nil, fmt.Errorf("sysctl %q (--allowed-unsafe-sysctls) must have at most %d characters and match regex %s", s, patternMaxLength, pattern)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(s)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q (--allowed-unsafe-sysctls) are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			a.prefixes[nameOrPrefix] = ns
		} else {
			a.names[nameOrPrefix] = ns
		}
	}
	return a, nil
}

func (a *Admission) Admit(pod *corev1.Pod) (ok bool, reason, message string) {
	for _, s := range sysctlsOf(pod) {
		if err := a.validate(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return false, ForbiddenReason, "forbidden sysctl: " + err.Error()
		}
	}
	return true, "", ""
}

func (a *Admission) validate(name string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	ns, found := a.names[name]
	for prefix, pns := range a.prefixes {
		if !found && strings.HasPrefix(name, prefix) {
			ns, found = pns, true
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%q not allowlisted", name)
	case ns == utilsysctl.IPCNamespace && hostIPC, ns == utilsysctl.NetNamespace && hostNet:
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
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
