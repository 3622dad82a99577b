// Package serviceaccount is the mutating half of Kubernetes' ServiceAccount admission
// plugin: a pod runs as its namespace's "default" account unless it names one, and gets
// a projected kube-api-access-xxxxx volume (a bound token, the cluster CA, its namespace)
// mounted where client-go's InClusterConfig looks, unless it opts out.
package serviceaccount

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

const (
	// DefaultAccount is the account of pods that name none.
	DefaultAccount = "default"
	// MountPath is where the token, ca.crt and namespace appear in containers.
	MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// VolumePrefix starts the generated volume's name.
	VolumePrefix = "kube-api-access-"
	// TokenExpirationSeconds is what the volume asks for: the kubelet refreshes the
	// token before it expires (3607 s, as kube-apiserver's admission writes it).
	TokenExpirationSeconds = 3607
	rootCAConfigMap        = "kube-root-ca.crt"
	mirrorPodAnnotation    = "kubernetes.io/config.mirror"
)

// Admit mutates a pod being created. Mirror pods are left alone (the API does not give
// static pods credentials).
func Admit(pod *corev1.Pod) {
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultAccount
	}
	if pod.Spec.DeprecatedServiceAccount == "" {
		pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	}
	if pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken {
		return
	}
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, VolumePrefix) && v.Projected != nil {
			name = v.Name // already there (the pod was made from one that had it)
		}
	}
	if name == "" {
		name = VolumePrefix + utilrand.String(5)
		pod.Spec.Volumes = append(pod.Spec.Volumes, Volume(name))
	}
	mount := func(cs []corev1.Container) {
		for i := range cs {
			if !mountsAt(cs[i].VolumeMounts, MountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: MountPath})
			}
		}
	}
	mount(pod.Spec.InitContainers)
	mount(pod.Spec.Containers)
}

func mountsAt(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// Volume is the projected kube-api-access volume, as kube-apiserver writes it.
func Volume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](TokenExpirationSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}
