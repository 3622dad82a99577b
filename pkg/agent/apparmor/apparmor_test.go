package apparmor

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmission: on a host without AppArmor a pending pod that asks for a profile, in the
// pod's or a container's security context or in the beta annotation, is refused with the
// kubelet's reason and message; Unconfined, no profile, a running pod or a host with
// AppArmor are admitted.
func TestAdmission(t *testing.T) {
	profile := func(typ corev1.AppArmorProfileType) *corev1.AppArmorProfile {
		return &corev1.AppArmorProfile{Type: typ}
	}
	podSC := func(p *corev1.AppArmorProfile) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{AppArmorProfile: p}, Containers: []corev1.Container{{Name: "app"}}}}
	}
	initSC := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", SecurityContext: &corev1.SecurityContext{AppArmorProfile: profile(corev1.AppArmorProfileTypeLocalhost)}}},
		Containers:     []corev1.Container{{Name: "app"}}}}
	annotated := func(value string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "app": value}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	}
	running := podSC(profile(corev1.AppArmorProfileTypeRuntimeDefault))
	running.Status.Phase = corev1.PodRunning
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		enabled bool
		admit   bool
	}{
		{"pod RuntimeDefault", podSC(profile(corev1.AppArmorProfileTypeRuntimeDefault)), false, false},
		{"pod Unconfined", podSC(profile(corev1.AppArmorProfileTypeUnconfined)), false, true},
		{"no profile", podSC(nil), false, true},
		{"init container Localhost", initSC, false, false},
		{"annotation runtime/default", annotated(corev1.DeprecatedAppArmorBetaProfileRuntimeDefault), false, false},
		{"annotation unconfined", annotated(corev1.DeprecatedAppArmorBetaProfileNameUnconfined), false, true},
		{"running already", running, false, true},
		{"host with AppArmor", podSC(profile(corev1.AppArmorProfileTypeRuntimeDefault)), true, true},
	} {
		ok, reason, message := Admission{Enabled: func() bool { return tc.enabled }}.Admit(tc.pod)
		if ok != tc.admit {
			t.Errorf("%s: admitted %v (%s %q), want %v", tc.name, ok, reason, message, tc.admit)
		}
		if !ok && (reason != "AppArmor" || message != "Cannot enforce AppArmor: AppArmor is not enabled on the host") {
			t.Errorf("%s: refused with %s %q, want the kubelet's", tc.name, reason, message)
		}
	}
}
