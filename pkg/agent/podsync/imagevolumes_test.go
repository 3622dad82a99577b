package podsync

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/images"
)

// TestImageVolumeImageIsPulledBeforeContainers: the images of a pod's image volumes are
// made present once the sandbox is there, their events on the pod; a container mounting
// one that is not present waits with its reason and a "Failed Error: REASON" event,
// before its own image is looked at, while a container not mounting it starts (the
// kubelet's getImageVolumes and toKubeContainerImageVolumes).
func TestImageVolumeImageIsPulledBeforeContainers(t *testing.T) {
	h := newHarness(t)
	const volImage = "localhost/minik8s/netexec:v1"
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "reader", "other")
	pod.Spec.Volumes = []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: volImage, PullPolicy: corev1.PullNever}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "img", MountPath: "/img"}}
	h.Runtime.Images["localhost/minik8s/busybox:v1"] = true
	pod, st := h.admit(pod)

	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("a missing image volume with pull policy Never did not fail")
	}
	never := `Container image "` + volImage + `" is not present with pull policy of Never`
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "reader"); cs.State.Waiting == nil ||
		cs.State.Waiting.Reason != images.ReasonErrImageNeverPull || cs.State.Waiting.Message != never {
		t.Errorf("reader %+v, want ErrImageNeverPull %q", cs.State, never)
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "other"); cs.State.Running == nil {
		t.Errorf("other, which does not mount the volume: %+v, want running", cs.State)
	}
	events := h.TakeEvents()
	for _, want := range []string{"Warning ErrImageNeverPull " + never, "Warning Failed Error: ErrImageNeverPull"} {
		if !slices.Contains(events, want) {
			t.Errorf("events %q, want %q", events, want)
		}
	}
	if calls := h.Runtime.TakeCalls(); slices.Contains(calls, "create reader") {
		t.Errorf("reader was made without its image volume: %q", calls)
	}

	h.Runtime.Images[volImage] = true
	h.sync(st, pod)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "reader"); cs.State.Running == nil {
		t.Errorf("reader once the image is present: %+v, want running", cs.State)
	}
	if events := h.TakeEvents(); !slices.Contains(events, `Normal Pulled Container image "`+volImage+`" already present on machine and can be accessed by the pod`) {
		t.Errorf("events %q, want the volume's image found", events)
	}
}
