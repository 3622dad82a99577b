package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/apps"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodRuntimeFieldsValidation: the user namespace, runtime class, preemption, overhead,
// OS, seccomp and AppArmor fields, a pod's images and its ephemeral claims' names are
// refused as kube's ValidatePodSpec and ValidatePodCreate refuse them
// (pkg/apis/core/validation/validation.go, v1.36).
func TestPodRuntimeFieldsValidation(t *testing.T) {
	no, yes := false, true
	str := func(s string) *string { return &s }
	id := func(i int64) *int64 { return &i }
	cases := []struct {
		name        string
		annotations map[string]string
		edit        func(*corev1.PodSpec)
		want        []string
	}{
		{"own user namespace with the node's others", nil, func(s *corev1.PodSpec) {
			s.HostUsers, s.HostNetwork, s.HostPID, s.HostIPC = &no, true, true, true
			s.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvda"}}
			s.Volumes = []corev1.Volume{{Name: "blk", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
		}, []string{
			"spec.hostNetwork: Forbidden: when `hostUsers` is false",
			"spec.HostPID: Forbidden: when `hostUsers` is false",
			"spec.HostIPC: Forbidden: when `hostUsers` is false",
			"spec.containers[0].volumeDevices: Forbidden: when `hostUsers` is false",
		}},
		{"runtime class, preemption, overhead", nil, func(s *corev1.PodSpec) {
			policy := corev1.PreemptionPolicy("Always")
			s.RuntimeClassName, s.PreemptionPolicy = str("Kata"), &policy
			s.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}, []string{
			`spec.runtimeClassName: Invalid value: "Kata": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`spec.preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"`,
			`spec.overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0`,
		}},
		{"unknown OS", nil, func(s *corev1.PodSpec) {
			s.OS = &corev1.PodOS{Name: "plan9"}
		}, []string{`spec.os: Unsupported value: "plan9": supported values: "linux", "windows"`}},
		{"linux pod with Windows options", nil, func(s *corev1.PodSpec) {
			s.OS = &corev1.PodOS{Name: corev1.Linux}
			s.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{}}
			s.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{}}
		}, []string{
			"spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
			"spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
		}},
		{"windows pod with Linux fields", nil, func(s *corev1.PodSpec) {
			s.OS = &corev1.PodOS{Name: corev1.Windows}
			s.HostPID = true
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: id(1000), Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
			s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &yes}}}
		}, []string{
			"spec.hostPID: Forbidden: cannot be set for a windows pod",
			"spec.securityContext.sysctls: Forbidden: cannot be set for a windows pod",
			"spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
			"spec.initContainers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
		}},
		{"pod seccomp and AppArmor fields", nil, func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost},
				AppArmorProfile: &corev1.AppArmorProfile{Type: "Strict"}}
		}, []string{
			"spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
			`spec.securityContext.appArmorProfile.type: Unsupported value: "Strict": supported values: "Localhost", "RuntimeDefault", "Unconfined"`,
		}},
		{"annotations against the profile fields", map[string]string{
			corev1.SeccompPodAnnotationKey:                                  "unconfined",
			corev1.SeccompContainerAnnotationKeyPrefix + "c":                "localhost/a.json",
			corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default",
		}, func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
			s.Containers[0].SecurityContext = &corev1.SecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: str("b.json")}}
		}, []string{
			"spec.securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match",
			"spec.containers[0].securityContext.seccompProfile.localhostProfile: Forbidden: seccomp profile in annotation and field must match",
			// Not the AppArmor annotation: the create turns it into the container's field first.
		}},
		{"AppArmor annotation against the container's field", map[string]string{
			corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default",
		}, func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
		}, []string{
			"spec.containers[0].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must match",
		}},
		{"padded images", nil, func(s *corev1.PodSpec) {
			s.Containers[0].Image = " busybox"
			s.InitContainers = []corev1.Container{{Name: "init", Image: " "}}
		}, []string{
			`spec.containers[0].image: Invalid value: " busybox": must not have leading or trailing whitespace`,
			`spec.initContainers[0].image: Invalid value: " ": must not have leading or trailing whitespace`,
		}},
		{"ephemeral volume's claim name too long", nil, func(s *corev1.PodSpec) {
			name := strings.Repeat("v", 63)
			s.Volumes = []corev1.Volume{{Name: name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}}}
		}, []string{`spec.volumes[0].name: Invalid value: "` + strings.Repeat("v", 63) + `": PVC name "` + strings.Repeat("p", 190) + "-" + strings.Repeat("v", 63) + `": must be no more than 253 characters`}},
	}
	for _, c := range cases {
		meta := metav1.ObjectMeta{Name: strings.Repeat("p", 190), Namespace: "default", Annotations: c.annotations}
		if got := podCreateErrors(meta, c.edit); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestPodRuntimeFieldsAcceptsValid: matching annotations and fields, a user namespace
// alone, a windows pod's own options, and a template's blank image (kube leaves it to
// whoever fills it in) pass.
func TestPodRuntimeFieldsAcceptsValid(t *testing.T) {
	no := false
	policy := corev1.PreemptNever
	runtimeClass := "kata"
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "linux", Namespace: "default", Annotations: map[string]string{
			corev1.SeccompPodAnnotationKey:                                  "docker/default",
			corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "localhost/web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				OS: &corev1.PodOS{Name: corev1.Linux}, HostUsers: &no, PreemptionPolicy: &policy, RuntimeClassName: &runtimeClass,
				Overhead: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				SecurityContext: &corev1.PodSecurityContext{
					SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &[]string{"web"}[0]}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "windows", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{}}}},
				OS: &corev1.PodOS{Name: corev1.Windows}}},
	}
	for _, pod := range pods {
		if errs := registrytest.CreateSteps(PodRules, pod); len(errs) != 0 {
			t.Errorf("pod %s refused: %v", pod.Name, errs.ToAggregate())
		}
	}
	d := registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Template.Spec.Containers[0].Image = " "
	if errs := registrytest.CreateSteps(apps.DeploymentRules, d); len(errs) != 0 {
		t.Errorf("a template's blank image refused: %v", errs.ToAggregate())
	}
}
