package volumes

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestProjectedVolumeReportsEverySource: a projected volume whose ConfigMap and Secret
// are both missing fails with both, as the kubelet's projected volume aggregates the
// errors of its sources.
func TestProjectedVolumeReportsEverySource(t *testing.T) {
	m, _ := testManager(t)
	pod := volumePod(corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}},
	}}}})
	_, err := m.SetUp(context.Background(), pod)
	want := `MountVolume.SetUp failed for volume "proj" : [configmap "a" not found, secret "b" not found]`
	if err == nil || err.Error() != want {
		t.Errorf("SetUp: %v, want %s", err, want)
	}
}
