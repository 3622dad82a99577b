package sysctl

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestAdmission: safe sysctls are admitted (slash-separated names too), others refused
// with the kubelet's reason and words, and a safe one of a namespace the pod shares with
// the node refused; the sandbox gets the dotted names.
func TestAdmission(t *testing.T) {
	pod := func(hostNet, hostIPC bool, sysctls ...corev1.Sysctl) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC,
			SecurityContext: &corev1.PodSecurityContext{Sysctls: sysctls}}}
	}
	safeOnly, err := NewAdmission(nil)
	if err != nil {
		t.Fatal(err)
	}
	shm := corev1.Sysctl{Name: "kernel.shm_rmid_forced", Value: "1"}
	port := corev1.Sysctl{Name: "net/ipv4/ip_local_port_range", Value: "1024 65000"}
	for _, tc := range []struct {
		pod     *corev1.Pod
		message string // "" admitted
	}{
		{pod(false, false, shm, port), ""},
		{pod(false, false), ""},
		{&corev1.Pod{}, ""},
		{pod(false, false, corev1.Sysctl{Name: "kernel.msgmax", Value: "1"}), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{pod(true, false, port), `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		{pod(false, true, shm), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{pod(true, false, shm), ""},
	} {
		ok, reason, message := safeOnly.Admit(tc.pod)
		if ok != (tc.message == "") || message != tc.message || (!ok && reason != ForbiddenReason) {
			t.Errorf("%+v: admitted %v, %q %q; want message %q", tc.pod.Spec.SecurityContext, ok, reason, message, tc.message)
		}
	}
	want := map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_local_port_range": "1024 65000"}
	if got := Sandbox(pod(false, false, shm, port)); !maps.Equal(got, want) {
		t.Errorf("sandbox sysctls %v, want %v", got, want)
	}
}

// TestUnsafeAllowed: --allowed-unsafe-sysctls adds names and * patterns, each namespaced,
// as the kubelet's allowlist; a node-wide or malformed one is refused at start.
func TestUnsafeAllowed(t *testing.T) {
	a, err := NewAdmission([]string{"kernel.msg*", "net.core.somaxconn"})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(hostIPC bool, names ...string) *corev1.Pod {
		var list []corev1.Sysctl
		for _, n := range names {
			list = append(list, corev1.Sysctl{Name: n, Value: "1"})
		}
		return &corev1.Pod{Spec: corev1.PodSpec{HostIPC: hostIPC, SecurityContext: &corev1.PodSecurityContext{Sysctls: list}}}
	}
	for _, tc := range []struct {
		pod     *corev1.Pod
		message string
	}{
		{pod(false, "kernel.msgmax", "kernel/msgmnb", "net.core.somaxconn", "kernel.shm_rmid_forced"), ""},
		{pod(false, "kernel.sem"), `forbidden sysctl: "kernel.sem" not allowlisted`},
		{pod(true, "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`},
	} {
		if ok, _, message := a.Admit(tc.pod); ok != (tc.message == "") || message != tc.message {
			t.Errorf("%v: admitted %v %q, want %q", tc.pod.Spec.SecurityContext.Sysctls, ok, message, tc.message)
		}
	}
	for list, want := range map[string]string{
		"vm.swappiness":  `the sysctls "vm.swappiness" (--allowed-unsafe-sysctls) are not known to be namespaced`,
		"kernel.*":       `the sysctls "kernel." (--allowed-unsafe-sysctls) are not known to be namespaced`,
		"Kernel.MsgMax":  `sysctl "Kernel.MsgMax" (--allowed-unsafe-sysctls) must have at most 253 characters`,
		"kernel..msgmax": `sysctl "kernel..msgmax" (--allowed-unsafe-sysctls) must have at most 253 characters`,
	} {
		if _, err := NewAdmission([]string{list}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("allowing %q: %v, want %q...", list, err, want)
		}
	}
}
