package serviceaccount

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func start(t *testing.T, accounts ...*corev1.ServiceAccount) *Plugin {
	return admissiontest.Started(t, New, accounts...)
}

func account(name string, automount *bool) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, AutomountServiceAccountToken: automount,
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}}
}

func pod(name, sa string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "app"}}, InitContainers: []corev1.Container{{Name: "init"}}}}
}

func admit(t *testing.T, p *Plugin, pd *corev1.Pod) error {
	a := admissiontest.Attrs(t, generic.Create, podsGVR, "", pd, nil)
	if err := p.Admit(context.Background(), a); err != nil {
		return err
	}
	return p.Validate(context.Background(), a)
}

func TestDefaultAccountAndTokenVolume(t *testing.T) {
	p := start(t, account("default", nil))
	pd := pod("web", "")
	if err := admit(t, p, pd); err != nil {
		t.Fatal(err)
	}
	if pd.Spec.ServiceAccountName != "default" || pd.Spec.DeprecatedServiceAccount != "default" {
		t.Errorf("account %q/%q, want default", pd.Spec.ServiceAccountName, pd.Spec.DeprecatedServiceAccount)
	}
	if len(pd.Spec.Volumes) != 1 || !strings.HasPrefix(pd.Spec.Volumes[0].Name, VolumePrefix) {
		t.Fatalf("volumes %+v, want one kube-api-access volume", pd.Spec.Volumes)
	}
	for _, c := range append(pd.Spec.InitContainers, pd.Spec.Containers...) {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != MountPath || !c.VolumeMounts[0].ReadOnly {
			t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
		}
	}
	if len(pd.Spec.ImagePullSecrets) != 1 || pd.Spec.ImagePullSecrets[0].Name != "registry" {
		t.Errorf("imagePullSecrets %+v, want the account's", pd.Spec.ImagePullSecrets)
	}
}

// Containers that all mount something of their own at the token's path need no token
// volume, and get none, as kube's plugin adds it only when a container mounts it.
func TestNoTokenVolumeWhenEveryContainerMountsItsOwn(t *testing.T) {
	p := start(t, account("default", nil))
	pd := pod("web", "")
	own := []corev1.VolumeMount{{Name: "own", MountPath: MountPath}}
	pd.Spec.InitContainers[0].VolumeMounts, pd.Spec.Containers[0].VolumeMounts = own, own
	pd.Spec.Volumes = []corev1.Volume{{Name: "own", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if err := admit(t, p, pd); err != nil {
		t.Fatal(err)
	}
	if len(pd.Spec.Volumes) != 1 || pd.Spec.Volumes[0].Name != "own" {
		t.Errorf("volumes %+v, want only the pod's own", pd.Spec.Volumes)
	}
	for _, c := range append(pd.Spec.InitContainers, pd.Spec.Containers...) {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != "own" {
			t.Errorf("container %s mounts %+v, want only its own", c.Name, c.VolumeMounts)
		}
	}
}

func TestAutomountOptOuts(t *testing.T) {
	p := start(t, account("quiet", ptr.To(false)), account("loud", nil))
	for _, tc := range []struct {
		name, sa  string
		podChoice *bool
		volumes   int
	}{
		{"account opts out", "quiet", nil, 0},
		{"pod overrides the account", "quiet", ptr.To(true), 1},
		{"pod opts out", "loud", ptr.To(false), 0},
	} {
		pd := pod("p", tc.sa)
		pd.Spec.AutomountServiceAccountToken = tc.podChoice
		if err := admit(t, p, pd); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(pd.Spec.Volumes) != tc.volumes {
			t.Errorf("%s: volumes %+v, want %d", tc.name, pd.Spec.Volumes, tc.volumes)
		}
	}
}

func TestMissingAccountIsRefused(t *testing.T) {
	p := start(t)
	err := admit(t, p, pod("x", "sa"))
	want := `pods "x" is forbidden: error looking up service account ns/sa: serviceaccount "sa" not found`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestMirrorPods(t *testing.T) {
	p := start(t)
	mirror := func(mutate func(*corev1.Pod)) *corev1.Pod {
		pd := pod("static", "")
		pd.Annotations = map[string]string{mirrorPodAnnotation: "hash"}
		mutate(pd)
		return pd
	}
	plain := mirror(func(*corev1.Pod) {})
	if err := admit(t, p, plain); err != nil || plain.Spec.ServiceAccountName != "" || len(plain.Spec.Volumes) != 0 {
		t.Errorf("mirror pod: %v, account %q, volumes %v; want it admitted unchanged", err, plain.Spec.ServiceAccountName, plain.Spec.Volumes)
	}
	for want, pd := range map[string]*corev1.Pod{
		"a mirror pod may not reference service accounts": mirror(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }),
		"a mirror pod may not reference secrets": mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}),
		"a mirror pod may not use ServiceAccountToken volume projections": mirror(func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{Volume("kube-api-access-x")} }),
	} {
		if err := admit(t, p, pd); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %s", err, want)
		}
	}
}

// TestEnforceMountableSecrets: an account annotated kubernetes.io/enforce-mountable-secrets
// lets its pods name only the secrets it lists (volumes, env of containers and init
// containers) and the pull secrets it lists, with kube-apiserver's refusals.
func TestEnforceMountableSecrets(t *testing.T) {
	strict := account("strict", ptr.To(false))
	strict.Annotations = map[string]string{"kubernetes.io/enforce-mountable-secrets": "true"}
	strict.Secrets = []corev1.ObjectReference{{Name: "listed"}}
	loose := account("loose", ptr.To(false))
	loose.Annotations = map[string]string{"kubernetes.io/enforce-mountable-secrets": "false"}
	p := start(t, strict, loose)
	secretVolume := func(name string) func(*corev1.Pod) {
		return func(pd *corev1.Pod) {
			pd.Spec.Volumes = append(pd.Spec.Volumes, corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}})
		}
	}
	for _, tc := range []struct {
		name, sa string
		mutate   func(*corev1.Pod)
		want     string
	}{
		{"a listed secret", "strict", secretVolume("listed"), ""},
		{"the account's pull secret", "strict", func(pd *corev1.Pod) {}, ""},
		{"an unlisted volume", "strict", secretVolume("other"),
			`pods "p" is forbidden: volume with secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"an unlisted env var", "strict", func(pd *corev1.Pod) {
			pd.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "k"}}}}
		}, `pods "p" is forbidden: container app with envVar PW referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"an unlisted envFrom of an init container", "strict", func(pd *corev1.Pod) {
			pd.Spec.InitContainers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}}}
		}, `pods "p" is forbidden: init container init with envFrom referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"an unlisted pull secret", "strict", func(pd *corev1.Pod) {
			pd.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}, {Name: "mine"}}
		}, `pods "p" is forbidden: imagePullSecrets[1].name="mine" is not allowed because service account strict does not reference that imagePullSecret`},
		{"not enforced", "loose", secretVolume("other"), ""},
	} {
		pd := pod("p", tc.sa)
		tc.mutate(pd)
		err := admit(t, p, pd)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || err.Error() != tc.want)) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
