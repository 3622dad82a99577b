package podsync

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// TestVolumeWhoseSourceIsGoneStaysMounted: a configMap volume that was set up keeps its
// files when its ConfigMap is deleted, and the pod goes on: the kubelet's volume manager
// keeps a mounted volume mounted when its refresh fails (a FailedMount event says so), so
// the pod's containers are still synced and one that exits is restarted, with the files
// it had. Only a volume never set up holds the pod in ContainerCreating.
func TestVolumeWhoseSourceIsGoneStaysMounted(t *testing.T) {
	h := newHarness(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Data: map[string]string{"key": "v1"}}
	if _, err := h.Client.CoreV1().ConfigMaps("default").Create(h.ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}
	pod, st := h.start(pod)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Running == nil {
		t.Fatalf("app: %+v, want running", cs.State)
	}
	h.TakeEvents()

	if err := h.Client.CoreV1().ConfigMaps("default").Delete(h.ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.exitAndSync(st, pod, "app", 1)
	want := `Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`
	if events := h.TakeEvents(); !slices.Contains(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Running == nil || cs.RestartCount != 1 {
		t.Errorf("app after it exited: %+v, restarts %d; want restarted", cs.State, cs.RestartCount)
	}
	file := filepath.Join(h.syncer.cfg.PodsDir, string(pod.UID), "volumes", "kubernetes.io~configmap", "cfg", "key")
	if data, err := os.ReadFile(file); err != nil || string(data) != "v1" {
		t.Errorf("the volume's file: %q (%v), want the ConfigMap's last data", data, err)
	}
}
