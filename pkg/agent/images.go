package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
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
func (a *Agent) ensureImage(ctx context.Context, st *podState, pod *corev1.Pod, c *corev1.Container) (time.Duration, error) {
	present, err := a.rt.HasImage(ctx, c.Image)
	if err != nil {
		return 0, fmt.Errorf("look up image %q: %w", c.Image, err)
	}
	switch {
	case c.ImagePullPolicy == corev1.PullNever && !present:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		st.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonErrImageNeverPull, Message: msg}
		a.containerEvent(pod, c.Name, corev1.EventTypeWarning, eventErrImageNeverPull, "%s", msg)
		a.imageError(pod, c.Name, reasonErrImageNeverPull)
		return 0, fmt.Errorf("container %s of pod %s: %s", c.Name, podKey(pod), msg)
	case present && c.ImagePullPolicy != corev1.PullAlways:
		a.containerEvent(pod, c.Name, corev1.EventTypeNormal, eventPulled, "Container image %q already present on machine", c.Image)
		return 0, nil
	}

	key := "pull/" + string(pod.UID) + "/" + c.Image
	if a.backoff.IsInBackOffSinceUpdate(key, a.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		st.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonImagePullBackOff, Message: msg}
		a.containerEvent(pod, c.Name, corev1.EventTypeNormal, eventBackOff, "%s", msg)
		a.imageError(pod, c.Name, reasonImagePullBackOff)
		return a.backoff.Get(key), nil
	}
	a.containerEvent(pod, c.Name, corev1.EventTypeNormal, eventPulling, "Pulling image %q", c.Image)
	start := a.clock.Now()
	size, err := a.rt.PullImage(ctx, c.Image, a.pullOptions(ctx, pod))
	if err != nil {
		a.backoff.Next(key, a.clock.Now())
		st.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonErrImagePull, Message: err.Error()}
		a.containerEvent(pod, c.Name, corev1.EventTypeWarning, eventFailed, "Failed to pull image %q: %v", c.Image, err)
		a.imageError(pod, c.Name, reasonErrImagePull)
		return a.backoff.Get(key), fmt.Errorf("pull image %q for container %s of pod %s: %w", c.Image, c.Name, podKey(pod), err)
	}
	// Pulls are not queued here, so the time including waiting is the pull's.
	took := a.clock.Since(start).Truncate(time.Millisecond)
	a.containerEvent(pod, c.Name, corev1.EventTypeNormal, eventPulled, "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", c.Image, took, took, size)
	return 0, nil
}

// imageError records the kubelet's second event of a container whose image is
// not there: Warning Failed "Error: <waiting reason>", as its startContainer does.
func (a *Agent) imageError(pod *corev1.Pod, container, reason string) {
	a.containerEvent(pod, container, corev1.EventTypeWarning, eventFailed, "Error: %s", reason)
}
