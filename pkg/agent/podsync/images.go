package podsync

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/agent/credentials"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// Waiting reasons of a container whose image is not there, as the kubelet's.
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
)

// ensureImage makes a container's image present according to its
// imagePullPolicy: Always pulls for every new container, IfNotPresent only
// when missing, Never fails when missing. Failed pulls back off like the
// kubelet's (10 s doubling to 5 min); a positive duration is when to retry.
func (s *Syncer) ensureImage(ctx context.Context, st *PodState, pod *corev1.Pod, c *corev1.Container) (time.Duration, error) {
	present, err := s.rt.HasImage(ctx, c.Image)
	if err != nil {
		return 0, fmt.Errorf("look up image %q: %w", c.Image, err)
	}
	switch {
	case c.ImagePullPolicy == corev1.PullNever && !present:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		st.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonErrImageNeverPull, Message: msg}
		s.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, eventErrImageNeverPull, "%s", msg)
		s.imageError(pod, c.Name, reasonErrImageNeverPull)
		return 0, fmt.Errorf("container %s of pod %s: %s", c.Name, PodKey(pod), msg)
	case present && c.ImagePullPolicy != corev1.PullAlways:
		s.ContainerEvent(pod, c.Name, corev1.EventTypeNormal, eventPulled, "Container image %q already present on machine", c.Image)
		return 0, nil
	}

	key := "pull/" + string(pod.UID) + "/" + c.Image
	if s.backoff.IsInBackOffSinceUpdate(key, s.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		st.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonImagePullBackOff, Message: msg}
		s.ContainerEvent(pod, c.Name, corev1.EventTypeNormal, eventBackOff, "%s", msg)
		s.imageError(pod, c.Name, reasonImagePullBackOff)
		return s.backoff.Get(key), nil
	}
	s.ContainerEvent(pod, c.Name, corev1.EventTypeNormal, eventPulling, "Pulling image %q", c.Image)
	start := s.clock.Now()
	size, err := s.rt.PullImage(ctx, c.Image, s.pullOptions(ctx, pod))
	if err != nil {
		s.backoff.Next(key, s.clock.Now())
		st.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonErrImagePull, Message: err.Error()}
		s.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, eventFailed, "Failed to pull image %q: %v", c.Image, err)
		s.imageError(pod, c.Name, reasonErrImagePull)
		return s.backoff.Get(key), fmt.Errorf("pull image %q for container %s of pod %s: %w", c.Image, c.Name, PodKey(pod), err)
	}
	// Pulls are not queued here, so the time including waiting is the pull's.
	took := s.clock.Since(start).Truncate(time.Millisecond)
	s.ContainerEvent(pod, c.Name, corev1.EventTypeNormal, eventPulled, "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", c.Image, took, took, size)
	return 0, nil
}

// imageError records the kubelet's second event of a container whose image is
// not there: Warning Failed "Error: <waiting reason>", as its startContainer does.
func (s *Syncer) imageError(pod *corev1.Pod, container, reason string) {
	s.ContainerEvent(pod, container, corev1.EventTypeWarning, eventFailed, "Error: %s", reason)
}

// pullOptions are the registry settings for pulling a pod's images: the node's insecure
// registries and the credentials of the pod's imagePullSecrets. A secret that cannot be
// read is reported (as the kubelet does) and the pull goes on without it.
func (s *Syncer) pullOptions(ctx context.Context, pod *corev1.Pod) runtime.PullOptions {
	auths, missing := credentials.ForPod(ctx, s.client.CoreV1(), pod, s.log)
	if len(missing) > 0 {
		s.podEvent(pod, corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	return runtime.PullOptions{InsecureRegistries: s.cfg.InsecureRegistries, Auths: auths}
}
