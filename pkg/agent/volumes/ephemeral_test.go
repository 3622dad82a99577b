package volumes

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestEphemeralVolumeIsItsPodsClaim: a generic ephemeral volume is mounted as the claim
// POD-VOLUME once that claim is bound, only when the pod owns it (else the kubelet's
// error for a volume it does not take), as the kubelet's desired state of the world
// takes it.
func TestEphemeralVolumeIsItsPodsClaim(t *testing.T) {
	host := t.TempDir()
	claim, volume := boundClaim(host)
	claim.Name = "web-scratch"
	pod := volumePod(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}})

	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	m, _ := testManager(t, claim, volume)
	_, err := m.SetUp(context.Background(), pod)
	want := `unmounted volumes=[scratch], unattached volumes=[], failed to process volumes=[scratch]: PVC default/web-scratch was not created for pod default/web (pod is not owner)`
	if err == nil || err.Error() != want {
		t.Errorf("a claim the pod does not own: %v, want %s", err, want)
	}

	claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: pod.UID, Controller: ptr.To(true)}}
	m, _ = testManager(t, claim, volume)
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil || vols["scratch"].Path != host || vols["scratch"].ReadOnly {
		t.Errorf("the pod's own claim: %+v, %v; want %s read-write", vols["scratch"], err, host)
	}
}
