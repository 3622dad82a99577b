package volumes

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestImageVolumesAreTheRuntimes: an image volume is set up with nothing on the node (the
// runtime mounts the image, as the kubelet leaves it to CRI); its mounts are read-only
// image mounts whatever the volumeMount says, a subPath left for the runtime to find in
// the image once checked as the kubelet's makeMounts checks every subPath.
func TestImageVolumesAreTheRuntimes(t *testing.T) {
	m, dir := testManager(t)
	const image = "localhost/minik8s/netexec:v1"
	pod := volumePod(corev1.Volume{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: corev1.PullNever}}})
	vols, err := m.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Volume{Image: image, ReadOnly: true}); vols["img"] != want {
		t.Errorf("image volume %+v, want %+v", vols["img"], want)
	}
	if _, err := os.Stat(filepath.Join(dir, "pods", "uid-1", "volumes")); err == nil {
		t.Error("an image volume made a directory in the pod's")
	}
	c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
		{Name: "img", MountPath: "/img"},
		{Name: "img", MountPath: "/etc/img", SubPath: "etc"},
	}}
	mounts, err := ContainerMounts(c, vols)
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.Mount{
		{ContainerPath: "/img", ReadOnly: true, Propagation: "rprivate", Image: image},
		{ContainerPath: "/etc/img", ReadOnly: true, Propagation: "rprivate", Image: image, ImageSubPath: "etc"},
	}
	if !slices.Equal(mounts, want) {
		t.Errorf("mounts %+v, want %+v", mounts, want)
	}
	for sub, msg := range map[string]string{"../x": "unable to provision SubPath `../x`: must not contain '..'", "/abs": "error SubPath `/abs` must not be an absolute path"} {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "img", MountPath: "/d", SubPath: sub}}
		if _, err := ContainerMounts(c, vols); err == nil || err.Error() != msg {
			t.Errorf("subPath %q: %v, want %q", sub, err, msg)
		}
	}
}
