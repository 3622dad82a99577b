package podsync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// imagePull is how the image of an image volume was made present at this sync: waiting
// says why it is not (nil when it is), retry when to try again.
type imagePull struct {
	waiting *corev1.ContainerStateWaiting
	retry   time.Duration
	err     error
}

// pullImageVolumes makes the images of the pod's image volumes present by their pull
// policies, once per sync before any container starts, its events on the pod: the
// kubelet's getImageVolumes. Unused volumes too, as there: only the containers mounting a
// failed one wait.
func (s *Syncer) pullImageVolumes(ctx context.Context, pod *corev1.Pod) map[string]imagePull {
	pulls := map[string]imagePull{}
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Image != nil {
			waiting, retry, err := s.images.EnsureVolumeImage(ctx, pod, v, podObjectRef(pod))
			pulls[v.Name] = imagePull{waiting: waiting, retry: retry, err: err}
		}
	}
	return pulls
}

// imageVolumesWaiting is why container c cannot start while an image volume it mounts is
// not present: the last such volume's failure, each recorded as an event on c, as the
// kubelet's toKubeContainerImageVolumes. Nil when it can.
func (s *Syncer) imageVolumesWaiting(st *PodState, pod *corev1.Pod, c *corev1.Container) *imagePull {
	var failed *imagePull
	for _, vm := range c.VolumeMounts {
		if pull, ok := st.imagePulls[vm.Name]; ok && pull.waiting != nil {
			s.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, eventFailed, "Error: %s", pull.waiting.Reason)
			failed = &pull
		}
	}
	return failed
}
