package volumeprotection

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInUse(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase, vols ...corev1.Volume) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Volumes: vols}, Status: corev1.PodStatus{Phase: phase}}
	}
	claim := func(n string) corev1.Volume {
		return corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n}}}
	}
	ephemeral := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}
	pods := []*corev1.Pod{
		pod("running", corev1.PodRunning, claim("a")),
		pod("done", corev1.PodSucceeded, claim("b")),
		pod("pending", corev1.PodPending, ephemeral),
	}
	for claim, want := range map[string]bool{"a": true, "b": false, "pending-scratch": true, "c": false} {
		if got := inUse(pods, claim); got != want {
			t.Errorf("claim %s in use = %v, want %v", claim, got, want)
		}
	}
}
