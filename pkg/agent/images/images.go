// Package images is minilet's image manager, the kubelet's pkg/kubelet/images: it makes a
// container's image present as its imagePullPolicy says, pulling with the node's registry
// settings and the pod's imagePullSecrets, and backs off failed pulls.
package images

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/agent/credentials"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// Waiting reasons of a container whose image is not there, as the kubelet's
// (pkg/kubelet/images/types.go).
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonInvalidImageName  = "InvalidImageName"
	ReasonImageInspectError = "ImageInspectError"
)

// Event reasons, as the kubelet spells them (pkg/kubelet/events).
const (
	eventPulling           = "Pulling"
	eventPulled            = "Pulled"
	eventFailed            = "Failed"
	eventBackOff           = "BackOff"
	eventErrImageNeverPull = "ErrImageNeverPull"
	eventInspectFailed     = "InspectFailed"
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
type Manager struct {
	cfg Config

	mu sync.Mutex
	// failed holds the last failed pull of each back-off key: when, and the message the
	// ImagePullBackOff that follows carries (the kubelet's prevPullErrMsg).
	failed map[string]pullFailure
}

type pullFailure struct {
	at  time.Time
	msg string
}

// New makes a Manager on cfg.
func New(cfg Config) *Manager { return &Manager{cfg: cfg, failed: map[string]pullFailure{}} }

// EnsureImage makes a container's image present according to its imagePullPolicy:
// Always pulls for every new container, IfNotPresent only when missing, Never fails
// when missing. Failed pulls back off; a positive duration is when to retry. ref is
// the container, for events. When the image is not there, waiting says why (the
// container's waiting state), in the words and events of the kubelet's image manager
// (pkg/kubelet/images/image_manager.go, v1.36).
func (m *Manager) EnsureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, ref *corev1.ObjectReference) (waiting *corev1.ContainerStateWaiting, retry time.Duration, err error) {
	return m.ensure(ctx, pod, c.Image, c.ImagePullPolicy, "container "+c.Name, ref)
}

// EnsureVolumeImage makes an image volume's image present according to its pullPolicy,
// as EnsureImage a container's: the kubelet pulls it with the same image manager, its
// events on ref (the pod), and a failure is the waiting state of the containers that
// mount the volume.
func (m *Manager) EnsureVolumeImage(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, ref *corev1.ObjectReference) (waiting *corev1.ContainerStateWaiting, retry time.Duration, err error) {
	return m.ensure(ctx, pod, v.Image.Reference, v.Image.PullPolicy, "image volume "+v.Name, ref)
}

// ensure makes image present as policy says; of is what needs it, for errors.
func (m *Manager) ensure(ctx context.Context, pod *corev1.Pod, image string, policy corev1.PullPolicy, of string, ref *corev1.ObjectReference) (waiting *corev1.ContainerStateWaiting, retry time.Duration, err error) {
	// The kubelet's applyDefaultImageTag, with its parsers.ParseImageName.
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: %v", image, image, err)
		m.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, eventInspectFailed, "%s", msg)
		return &corev1.ContainerStateWaiting{Reason: ReasonInvalidImageName, Message: msg}, 0,
			fmt.Errorf("%s of pod %s: %s", of, podKey(pod), msg)
	}
	if policy != corev1.PullAlways {
		present, err := m.cfg.Runtime.HasImage(ctx, image)
		if err != nil {
			msg := fmt.Sprintf("Failed to inspect image %q: %v", image, err)
			m.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, eventInspectFailed, "%s", msg)
			return &corev1.ContainerStateWaiting{Reason: ReasonImageInspectError, Message: msg}, 0,
				fmt.Errorf("%s of pod %s: %s", of, podKey(pod), msg)
		}
		switch {
		case present:
			// The words of a kubelet with KubeletEnsureSecretPulledImages (on by default
			// since 1.35).
			m.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, eventPulled, "Container image %q already present on machine and can be accessed by the pod", image)
			return nil, 0, nil
		case policy == corev1.PullNever:
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
			m.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, eventErrImageNeverPull, "%s", msg)
			return &corev1.ContainerStateWaiting{Reason: ReasonErrImageNeverPull, Message: msg}, 0,
				fmt.Errorf("%s of pod %s: %s", of, podKey(pod), msg)
		}
	}

	key := "pull/" + string(pod.UID) + "/" + image
	now := m.cfg.Clock.Now()
	if m.cfg.Backoff.IsInBackOffSinceUpdate(key, now) {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		m.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, eventBackOff, "%s", msg)
		retry = m.cfg.Backoff.Get(key)
		m.mu.Lock()
		if last, ok := m.failed[key]; ok {
			// The status, not the event, says what the last pull failed with.
			msg += ": " + last.msg
			retry = last.at.Add(retry).Sub(now)
		}
		m.mu.Unlock()
		return &corev1.ContainerStateWaiting{Reason: ReasonImagePullBackOff, Message: msg}, max(retry, time.Millisecond), nil
	}
	m.mu.Lock()
	delete(m.failed, key)
	m.mu.Unlock()

	m.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, eventPulling, "Pulling image %q", image)
	start := m.cfg.Clock.Now()
	size, err := m.cfg.Runtime.PullImage(ctx, image, m.pullOptions(ctx, pod))
	if err != nil {
		now := m.cfg.Clock.Now()
		m.cfg.Backoff.Next(key, now)
		// The kubelet has the error through the CRI, as containerd's CRI plugin
		// returns it: a gRPC status.
		msg := errgrpc.ToGRPC(err).Error()
		m.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, eventFailed, "Failed to pull image %q: %s", image, msg)
		m.mu.Lock()
		m.failed[key] = pullFailure{at: now, msg: ReasonErrImagePull + ": " + msg}
		m.mu.Unlock()
		return &corev1.ContainerStateWaiting{Reason: ReasonErrImagePull, Message: msg}, m.cfg.Backoff.Get(key),
			fmt.Errorf("pull image %q for %s of pod %s: %w", image, of, podKey(pod), err)
	}
	// Pulls are not queued here, so the time including waiting is the pull's.
	took := m.cfg.Clock.Since(start).Truncate(time.Millisecond)
	m.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, eventPulled, "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", image, took, took, size)
	return nil, 0, nil
}

// ForgetExpiredBackoffs drops pull back-offs that have expired, and what their last
// pulls failed with (housekeeping).
func (m *Manager) ForgetExpiredBackoffs() {
	m.cfg.Backoff.GC()
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.failed {
		if m.cfg.Backoff.Get(key) == 0 {
			delete(m.failed, key)
		}
	}
}

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
