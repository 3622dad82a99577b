package images_test

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/images"
)

const image = "localhost/minik8s/netexec:v1"

func newManager(env *agenttest.Env) *images.Manager {
	backoff := flowcontrol.NewBackOff(10*time.Second, 5*time.Minute)
	backoff.Clock = env.Clock
	return images.New(images.Config{Runtime: env.Runtime, Secrets: env.Client.CoreV1(), Recorder: env.Events,
		Backoff: backoff, Clock: env.Clock, Log: slog.Default()})
}

func TestPullPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy  corev1.PullPolicy
		present bool
		reason  string // the waiting reason; "" for an image made present
		pulled  bool
		event   string
	}{
		{policy: corev1.PullNever, reason: images.ReasonErrImageNeverPull, event: `Warning ErrImageNeverPull Container image "` + image + `" is not present with pull policy of Never`},
		{policy: corev1.PullNever, present: true, event: `Normal Pulled Container image "` + image + `" already present on machine and can be accessed by the pod`},
		{policy: corev1.PullIfNotPresent, present: true, event: `Normal Pulled Container image "` + image + `" already present on machine and can be accessed by the pod`},
		{policy: corev1.PullIfNotPresent, pulled: true, event: `Normal Pulled Successfully pulled image "` + image + `" in 0s (0s including waiting). Image size: 4096 bytes.`},
		{policy: corev1.PullAlways, present: true, pulled: true, event: `Normal Pulled Successfully pulled image "` + image + `" in 0s (0s including waiting). Image size: 4096 bytes.`},
	} {
		t.Run(string(tc.policy)+map[bool]string{true: "/present", false: "/missing"}[tc.present], func(t *testing.T) {
			env := agenttest.NewEnv()
			m := newManager(env)
			pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
			c := &pod.Spec.Containers[0]
			c.Image, c.ImagePullPolicy = image, tc.policy
			env.Runtime.Images[image] = tc.present

			waiting, retry, err := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{})
			if got := waitingReason(waiting); got != tc.reason || (err != nil) != (tc.reason != "") || retry != 0 {
				t.Errorf("waiting %q, retry %v, err %v; want waiting %q", got, retry, err, tc.reason)
			}
			if pulled := slices.Contains(env.Runtime.TakeCalls(), "pull "+image); pulled != tc.pulled {
				t.Errorf("pulled: %v, want %v", pulled, tc.pulled)
			}
			if events := env.TakeEvents(); !slices.Contains(events, tc.event) {
				t.Errorf("events %q, want the kubelet's %q", events, tc.event)
			}
		})
	}
}

// TestFailedPullBacksOff: a failed pull is ErrImagePull with the runtime's error as the CRI
// reports it; the pulls that follow wait out the kubelet's back-off, each ImagePullBackOff
// saying what the last pull failed with (the kubelet's prevPullErrMsg, since 1.32).
func TestFailedPullBacksOff(t *testing.T) {
	env := agenttest.NewEnv()
	m := newManager(env)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "missing"}}
	c := &pod.Spec.Containers[0]
	c.Image = image
	env.Runtime.PullErr = errors.New("no such registry")
	const pullErr = "rpc error: code = Unknown desc = no such registry"

	waiting, retry, err := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{})
	if waitingReason(waiting) != images.ReasonErrImagePull || waiting.Message != pullErr || retry != 10*time.Second || err == nil {
		t.Fatalf("failed pull: waiting %+v, retry %v, err %v; want ErrImagePull %q, retry 10s", waiting, retry, err, pullErr)
	}
	events := env.TakeEvents()
	for _, want := range []string{`Normal Pulling Pulling image "` + image + `"`, `Warning Failed Failed to pull image "` + image + `": ` + pullErr} {
		if !slices.Contains(events, want) {
			t.Errorf("events %q, want the kubelet's %q", events, want)
		}
	}
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Warning FailedToRetrieveImagePullSecret") }) {
		t.Errorf("events %q, want a FailedToRetrieveImagePullSecret", events)
	}
	env.Runtime.TakeCalls()

	env.Clock.Step(time.Second)
	waiting, retry, err = m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{})
	backOff := `Back-off pulling image "` + image + `"`
	if want := backOff + ": ErrImagePull: " + pullErr; waitingReason(waiting) != images.ReasonImagePullBackOff || waiting.Message != want {
		t.Errorf("during the back-off: waiting %+v, want ImagePullBackOff %q", waiting, want)
	}
	if retry != 9*time.Second || err != nil {
		t.Errorf("during the back-off: retry %v, err %v; want the 9 s left of it", retry, err)
	}
	if events := env.TakeEvents(); !slices.Equal(events, []string{"Normal BackOff " + backOff}) {
		t.Errorf("events during the back-off %q, want the kubelet's %q", events, "Normal BackOff "+backOff)
	}
	if calls := env.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("pulled again during the back-off: %q", calls)
	}

	env.Runtime.PullErr = nil
	env.Clock.Step(9 * time.Second)
	if waiting, retry, err := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{}); waiting != nil || retry != 0 || err != nil {
		t.Errorf("after the back-off: waiting %+v, retry %v, err %v", waiting, retry, err)
	}
}

// TestPullBackOffDoubles: the kubelet's image back-off, per pod and image, is 10 s doubling
// to 300 s.
func TestPullBackOffDoubles(t *testing.T) {
	env := agenttest.NewEnv()
	m := newManager(env)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	c := &pod.Spec.Containers[0]
	c.Image = image
	env.Runtime.PullErr = errors.New("no such registry")
	for i, want := range []time.Duration{10, 20, 40, 80, 160, 300, 300} {
		waiting, retry, _ := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{})
		if waitingReason(waiting) != images.ReasonErrImagePull || retry != want*time.Second {
			t.Fatalf("pull %d: waiting %+v, retry %v; want ErrImagePull, retry %v", i+1, waiting, retry, want*time.Second)
		}
		env.Clock.Step(retry - time.Millisecond)
		if waiting, _, _ := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{}); waitingReason(waiting) != images.ReasonImagePullBackOff {
			t.Fatalf("just before the end of back-off %d: waiting %+v, want ImagePullBackOff", i+1, waiting)
		}
		env.Clock.Step(time.Millisecond)
	}
	// Another pod's pulls of the image have their own back-off.
	other := agenttest.Pod("other", corev1.RestartPolicyAlways, "app")
	other.UID = "other-uid"
	if waiting, retry, _ := m.EnsureImage(t.Context(), other, &other.Spec.Containers[0], &corev1.ObjectReference{}); waitingReason(waiting) != images.ReasonErrImagePull || retry != 10*time.Second {
		t.Errorf("another pod: waiting %+v, retry %v; want ErrImagePull, retry 10s", waiting, retry)
	}
}

// TestInvalidImageName: an image reference that does not parse is InvalidImageName with the
// kubelet's words, and nothing is looked up or pulled.
func TestInvalidImageName(t *testing.T) {
	env := agenttest.NewEnv()
	m := newManager(env)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	c := &pod.Spec.Containers[0]
	c.Image = "UPPER/Case"
	const msg = `Failed to apply default image tag "UPPER/Case": couldn't parse image name "UPPER/Case": invalid reference format: repository name (Case) must be lowercase`

	waiting, retry, err := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{})
	if waitingReason(waiting) != images.ReasonInvalidImageName || waiting.Message != msg || retry != 0 || err == nil {
		t.Fatalf("waiting %+v, retry %v, err %v; want InvalidImageName %q", waiting, retry, err, msg)
	}
	if events := env.TakeEvents(); !slices.Equal(events, []string{"Warning InspectFailed " + msg}) {
		t.Errorf("events %q, want the kubelet's %q", events, "Warning InspectFailed "+msg)
	}
	if calls := env.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("runtime calls for an invalid name: %q", calls)
	}
}

// TestVolumeImage: an image volume's image is made present by its pullPolicy as a
// container's by its imagePullPolicy, in the same words, and shares the pod's back-off
// of that image with the containers (the kubelet's EnsureImageExists for both).
func TestVolumeImage(t *testing.T) {
	env := agenttest.NewEnv()
	m := newManager(env)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	vol := &corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: corev1.PullNever}}}
	const never = `Container image "` + image + `" is not present with pull policy of Never`
	waiting, _, err := m.EnsureVolumeImage(t.Context(), pod, vol, &corev1.ObjectReference{})
	if waitingReason(waiting) != images.ReasonErrImageNeverPull || waiting.Message != never || err == nil || !strings.Contains(err.Error(), "image volume data") {
		t.Errorf("missing with Never: waiting %+v, err %v; want ErrImageNeverPull %q", waiting, err, never)
	}
	if events := env.TakeEvents(); !slices.Equal(events, []string{"Warning ErrImageNeverPull " + never}) {
		t.Errorf("events %q", events)
	}

	vol.Image.PullPolicy = corev1.PullIfNotPresent
	env.Runtime.PullErr = errors.New("no such registry")
	if waiting, _, _ := m.EnsureVolumeImage(t.Context(), pod, vol, &corev1.ObjectReference{}); waitingReason(waiting) != images.ReasonErrImagePull {
		t.Errorf("failed pull: waiting %+v, want ErrImagePull", waiting)
	}
	c := &pod.Spec.Containers[0]
	c.Image = image
	if waiting, _, _ := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{}); waitingReason(waiting) != images.ReasonImagePullBackOff {
		t.Errorf("a container of the pod with the image: waiting %+v, want the volume's ImagePullBackOff", waiting)
	}

	env.Runtime.Images[image] = true
	if waiting, retry, err := m.EnsureVolumeImage(t.Context(), pod, vol, &corev1.ObjectReference{}); waiting != nil || retry != 0 || err != nil {
		t.Errorf("present: waiting %+v, retry %v, err %v", waiting, retry, err)
	}
}

func waitingReason(w *corev1.ContainerStateWaiting) string {
	if w == nil {
		return ""
	}
	return w.Reason
}
