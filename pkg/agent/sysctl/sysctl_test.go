package sysctl

import (
	"maps"
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
		ok, reason, message := Admission{}.Admit(tc.pod)
		if ok != (tc.message == "") || message != tc.message || (!ok && reason != ForbiddenReason) {
			t.Errorf("%+v: admitted %v, %q %q; want message %q", tc.pod.Spec.SecurityContext, ok, reason, message, tc.message)
		}
	}
	want := map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_local_port_range": "1024 65000"}
	if got := Sandbox(pod(false, false, shm, port)); !maps.Equal(got, want) {
		t.Errorf("sandbox sysctls %v, want %v", got, want)
	}
}
