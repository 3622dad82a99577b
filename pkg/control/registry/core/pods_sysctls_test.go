package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodSysctlsValidation: kube's checks of securityContext.sysctls, as the Sysctls
// conformance test expects them: malformed names refused naming each, unsafe but well
// formed ones accepted (the node decides), duplicates and a host namespace's refused.
func TestPodSysctlsValidation(t *testing.T) {
	pod := func(hostNet bool, names ...string) *corev1.Pod {
		var sysctls []corev1.Sysctl
		for _, n := range names {
			sysctls = append(sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{HostNetwork: hostNet, RestartPolicy: corev1.RestartPolicyAlways,
				SecurityContext: &corev1.PodSecurityContext{Sysctls: sysctls},
				Containers:      []corev1.Container{defaulted(corev1.Container{Name: "c", Image: "busybox"})}}}
	}
	errs := validatePod(pod(false, "foo-", "kernel.shmmax", "safe-and-unsafe", "bar..")).ToAggregate().Error()
	for _, want := range []string{`Invalid value: "foo-"`, `Invalid value: "bar.."`} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors %q lack %q", errs, want)
		}
	}
	for _, not := range []string{"safe-and-unsafe", "kernel.shmmax"} {
		if strings.Contains(errs, not) {
			t.Errorf("errors %q name the well-formed %q", errs, not)
		}
	}
	if errs := validatePod(pod(false, "net/ipv4/ip_local_port_range", "kernel.shm_rmid_forced")); len(errs) != 0 {
		t.Errorf("valid sysctls refused: %v", errs)
	}
	if errs := validatePod(pod(false, "kernel.msgmax", "kernel.msgmax")); len(errs) != 1 || !strings.Contains(errs[0].Error(), "Duplicate value") {
		t.Errorf("a duplicate: %v", errs)
	}
	if errs := validatePod(pod(true, "net.ipv4.tcp_syncookies")); len(errs) != 1 || !strings.Contains(errs[0].Error(), "may not be specified when 'hostNetwork' is true") {
		t.Errorf("a net sysctl with hostNetwork: %v", errs)
	}
}
