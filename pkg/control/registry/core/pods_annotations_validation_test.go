package core

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/apps"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodSpecificAnnotations: the annotations a pod gives meaning to are refused as kube's
// ValidatePodSpecificAnnotations refuses them, in its order and words, on a pod and on a
// workload's template (kube-apiserver v1.36.3 answered the same, side by side).
func TestPodSpecificAnnotations(t *testing.T) {
	bad := map[string]string{
		corev1.MirrorPodAnnotationKey:                                      "abc",
		corev1.TolerationsAnnotationKey:                                    `[{"key":"a b","operator":"Exists"}]`,
		corev1.PodDeletionCost:                                             "+1",
		corev1.SeccompPodAnnotationKey:                                     "bogus",
		corev1.SeccompContainerAnnotationKeyPrefix + "c":                   "localhost/../x",
		corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c":    "weird",
		corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "nope": "runtime/default",
	}
	got := podCreateErrors(metav1.ObjectMeta{Name: "p", Namespace: "default", Annotations: bad}, func(*corev1.PodSpec) {})
	want := []string{
		`metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "abc": must set spec.nodeName if mirror pod annotation is set`,
		`metadata.annotations.scheduler.alpha.kubernetes.io/tolerations[0].key: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		`metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "+1": must be a 32bit integer`,
		`metadata.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: "bogus": must be a valid seccomp profile`,
		`metadata.annotations.container.seccomp.security.alpha.kubernetes.io/c: Invalid value: "../x": must not contain '..'`,
		`metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Invalid value: "weird": invalid AppArmor profile name: "weird"`,
		`metadata.annotations[container.apparmor.security.beta.kubernetes.io/nope]: Invalid value: "nope": container not found`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("pod:\n got %q\nwant %q", got, want)
	}

	d := registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Template.Annotations = map[string]string{corev1.SeccompPodAnnotationKey: "bogus", corev1.SeccompContainerAnnotationKeyPrefix + "c": "unconfined"}
	d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	registrytest.ExpectMessages(t, "template", registrytest.CreateSteps(apps.DeploymentRules, d),
		`spec.template.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: "bogus": must be a valid seccomp profile`,
		"spec.template.spec.containers[0].securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match")
}

// An alpha tolerations annotation that does not decode is refused with the JSON error kube
// gives: it decodes into its internal core.Toleration, which has no JSON tags.
func TestTolerationsAnnotationDecodeErrors(t *testing.T) {
	for value, want := range map[string]string{
		`{"a":1}`:      `metadata.annotations: Invalid value: "scheduler.alpha.kubernetes.io/tolerations": json: cannot unmarshal object into Go value of type []core.Toleration`,
		`[{"key": 5}]`: `metadata.annotations: Invalid value: "scheduler.alpha.kubernetes.io/tolerations": json: cannot unmarshal number into Go struct field Toleration.Key of type string`,
	} {
		annotations := map[string]string{corev1.TolerationsAnnotationKey: value}
		if got := podCreateErrors(metav1.ObjectMeta{Name: "p", Namespace: "default", Annotations: annotations}, func(*corev1.PodSpec) {}); !slices.Equal(got, []string{want}) {
			t.Errorf("%s:\n got %q\nwant %q", value, got, want)
		}
	}
}

// TestPodSpecificAnnotationUpdates: an update may not change or drop a pod's AppArmor or
// mirror annotation, nor give it an unreadable deletion cost; a cost stored unreadable may
// stay, and a status update does not re-check annotations stored before these checks.
func TestPodSpecificAnnotationUpdates(t *testing.T) {
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "1", Annotations: map[string]string{
		corev1.MirrorPodAnnotationKey: "abc", corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default"}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if errs := registrytest.CreateSteps(PodRules, old); len(errs) != 0 {
		t.Fatal(errs.ToAggregate())
	}
	changed := old.DeepCopy()
	changed.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "def", corev1.PodDeletionCost: "ten"}
	registrytest.ExpectMessages(t, "changed", registrytest.UpdateSteps(PodRules, changed, old),
		`metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "ten": must be a 32bit integer`,
		"metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Forbidden: may not remove or update AppArmor annotations",
		"metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not remove or update mirror pod annotation",
		// kube checks the new annotations twice in an update; its causes list this twice too.
		`metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "ten": must be a 32bit integer`)
	added := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if errs := registrytest.CreateSteps(PodRules, added); len(errs) != 0 {
		t.Fatal(errs.ToAggregate())
	}
	withAnnotations := added.DeepCopy()
	withAnnotations.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x", corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default"}
	registrytest.ExpectMessages(t, "added", registrytest.UpdateSteps(PodRules, withAnnotations, added),
		`metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "x": must set spec.nodeName if mirror pod annotation is set`,
		"metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Forbidden: may not add AppArmor annotations",
		"metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation",
		`metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "x": must set spec.nodeName if mirror pod annotation is set`)

	storedBad := old.DeepCopy()
	storedBad.Annotations[corev1.PodDeletionCost] = "ten"
	storedBad.Annotations[corev1.SeccompPodAnnotationKey] = "bogus"
	labelled := storedBad.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	if errs := registrytest.UpdateSteps(PodRules, labelled, storedBad); len(errs) != 0 {
		t.Errorf("an update leaving stored annotations alone refused: %v", errs.ToAggregate())
	}
	kept := storedBad.DeepCopy()
	delete(kept.Annotations, corev1.SeccompPodAnnotationKey)
	kept.Annotations["note"] = "x"
	if errs := registrytest.UpdateSteps(PodRules, kept, storedBad); len(errs) != 0 {
		t.Errorf("a stored unreadable deletion cost kept: %v", errs.ToAggregate())
	}
}

// TestPodAppArmorAnnotationsBecomeFields: as kube's applyAppArmorVersionSkew, a new pod's
// container AppArmor annotation becomes its field, with a warning, unless the container
// has a field or the pod's profile says the same; one naming no profile is only warned of.
func TestPodAppArmorAnnotationsBecomeFields(t *testing.T) {
	prefix := corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix
	warning := func(c string) string {
		return `metadata.annotations[container.apparmor.security.beta.kubernetes.io/` + c + `]: deprecated since v1.30; use the "appArmorProfile" field instead`
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Annotations: map[string]string{
		prefix + "copied": "localhost/web", prefix + "own": "unconfined", prefix + "same": "runtime/default"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "copied", Image: "busybox"}, {Name: "same", Image: "busybox"},
				{Name: "own", Image: "busybox", SecurityContext: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}}}}}
	if got, want := PodRules.PrepareCreateWarnings(pod), []string{warning("copied")}; !slices.Equal(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
	if errs := registrytest.CreateSteps(PodRules, pod); len(errs) != 0 {
		t.Fatal(errs.ToAggregate())
	}
	if p := pod.Spec.Containers[0].SecurityContext; p == nil || p.AppArmorProfile == nil ||
		p.AppArmorProfile.Type != corev1.AppArmorProfileTypeLocalhost || *p.AppArmorProfile.LocalhostProfile != "web" {
		t.Errorf("copied: %+v, want Localhost web", p)
	}
	if pod.Spec.Containers[1].SecurityContext != nil {
		t.Errorf("same: %+v, want no field: the pod's profile says it", pod.Spec.Containers[1].SecurityContext)
	}
	if pod.Spec.Containers[2].SecurityContext.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
		t.Errorf("own field changed: %+v", pod.Spec.Containers[2].SecurityContext)
	}

	nameless := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default", Annotations: map[string]string{prefix + "i": "localhost/"}},
		Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", Image: "busybox"}}, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if got, want := PodRules.PrepareCreateWarnings(nameless), []string{warning("i")}; !slices.Equal(got, want) {
		t.Errorf("a profile without a name: warnings %q, want %q", got, want)
	}
	if errs := registrytest.CreateSteps(PodRules, nameless); len(errs) != 0 || nameless.Spec.InitContainers[0].SecurityContext != nil {
		t.Errorf("a profile without a name: %v, field %+v; want accepted, no field", errs.ToAggregate(), nameless.Spec.InitContainers[0].SecurityContext)
	}
}
