// Package images is minilet's image manager, the kubelet's pkg/kubelet/images: it makes a
// container's image present as its imagePullPolicy says, pulling with the node's registry
// settings and the pod's imagePullSecrets, and backs off failed pulls.
package images

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/agent/credentials"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// Waiting reasons of a container whose image is not there, as the kubelet's.
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
)

// Event reasons, as the kubelet spells them (pkg/kubelet/events).
const (
	eventPulling           = "Pulling"
	eventPulled            = "Pulled"
	eventFailed            = "Failed"
	eventBackOff           = "BackOff"
	eventErrImageNeverPull = "ErrImageNeverPull"
)

// Runtime is the part of the container runtime that holds images.
type Runtime interface {
	HasImage(ctx context.Context, ref string) (bool, error)
	PullImage(ctx context.Context, ref string, opts runtime.PullOptions) (size int64, err error)
}

// Config is what a Manager pulls with.
type Config struct {
	Runtime            Runtime
	Secrets            corev1client.SecretsGetter // the pods' imagePullSecrets
	Recorder           record.EventRecorder
	InsecureRegistries []string
	// Backoff spaces the pulls of an image that failed to pull (per pod and image).
	Backoff *flowcontrol.Backoff
	Clock   clock.Clock
	Log     *slog.Logger
}

// Manager pulls the images of the node's containers.
type Manager struct{ cfg Config }

// New makes a Manager on cfg.
func New(cfg Config) *Manager { return &Manager{cfg: cfg} }

// EnsureImage makes a container's image present according to its imagePullPolicy:
// Always pulls for every new container, IfNotPresent only when missing, Never fails
// when missing. Failed pulls back off; a positive duration is when to retry. ref is
// the container, for events. When the image is not there, waiting says why (the
// container's waiting state).
func (m *Manager) EnsureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, ref *corev1.ObjectReference) (waiting *corev1.ContainerStateWaiting, retry time.Duration, err error) {
	present, err := m.cfg.Runtime.HasImage(ctx, c.Image)
	if err != nil {
		return nil, 0, fmt.Errorf("look up image %q: %w", c.Image, err)
	}
	switch {
	case c.ImagePullPolicy == corev1.PullNever && !present:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		m.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, eventErrImageNeverPull, "%s", msg)
		return &corev1.ContainerStateWaiting{Reason: ReasonErrImageNeverPull, Message: msg}, 0,
			fmt.Errorf("container %s of pod %s: %s", c.Name, podKey(pod), msg)
	case present && c.ImagePullPolicy != corev1.PullAlways:
		m.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, eventPulled, "Container image %q already present on machine", c.Image)
		return nil, 0, nil
	}

	key := "pull/" + string(pod.UID) + "/" + c.Image
	if m.cfg.Backoff.IsInBackOffSinceUpdate(key, m.cfg.Clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		m.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, eventBackOff, "%s", msg)
		return &corev1.ContainerStateWaiting{Reason: ReasonImagePullBackOff, Message: msg}, m.cfg.Backoff.Get(key), nil
	}
	m.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, eventPulling, "Pulling image %q", c.Image)
	start := m.cfg.Clock.Now()
	size, err := m.cfg.Runtime.PullImage(ctx, c.Image, m.pullOptions(ctx, pod))
	if err != nil {
		m.cfg.Backoff.Next(key, m.cfg.Clock.Now())
		m.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, eventFailed, "Failed to pull image %q: %v", c.Image, err)
		return &corev1.ContainerStateWaiting{Reason: ReasonErrImagePull, Message: err.Error()}, m.cfg.Backoff.Get(key),
			fmt.Errorf("pull image %q for container %s of pod %s: %w", c.Image, c.Name, podKey(pod), err)
	}
	// Pulls are not queued here, so the time including waiting is the pull's.
	took := m.cfg.Clock.Since(start).Truncate(time.Millisecond)
	m.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, eventPulled, "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", c.Image, took, took, size)
	return nil, 0, nil
}

// ForgetExpiredBackoffs drops pull back-offs that have expired (housekeeping).
func (m *Manager) ForgetExpiredBackoffs() { m.cfg.Backoff.GC() }

// pullOptions are the registry settings for pulling a pod's images: the node's insecure
// registries and the credentials of the pod's imagePullSecrets. A secret that cannot be
// read is reported (as the kubelet does) and the pull goes on without it.
func (m *Manager) pullOptions(ctx context.Context, pod *corev1.Pod) runtime.PullOptions {
	auths, missing := credentials.ForPod(ctx, m.cfg.Secrets, pod, m.cfg.Log)
	if len(missing) > 0 {
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	return runtime.PullOptions{InsecureRegistries: m.cfg.InsecureRegistries, Auths: auths}
}

// podKey names a pod in messages: namespace/name.
func podKey(pod *corev1.Pod) string {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}.String()
}
