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
		{policy: corev1.PullNever, present: true, event: `Normal Pulled Container image "` + image + `" already present on machine`},
		{policy: corev1.PullIfNotPresent, present: true, event: `Normal Pulled Container image "` + image + `" already present on machine`},
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

func TestFailedPullBacksOff(t *testing.T) {
	env := agenttest.NewEnv()
	m := newManager(env)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "missing"}}
	c := &pod.Spec.Containers[0]
	env.Runtime.PullErr = errors.New("no such registry")

	waiting, retry, err := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{})
	if waitingReason(waiting) != images.ReasonErrImagePull || retry != 10*time.Second || err == nil {
		t.Fatalf("failed pull: waiting %+v, retry %v, err %v", waiting, retry, err)
	}
	events := env.TakeEvents()
	for _, want := range []string{"Warning FailedToRetrieveImagePullSecret", "Warning Failed Failed to pull image"} {
		if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("events %q, want one starting %q", events, want)
		}
	}
	env.Runtime.TakeCalls()

	env.Clock.Step(time.Second)
	waiting, retry, err = m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{})
	if waitingReason(waiting) != images.ReasonImagePullBackOff || retry != 10*time.Second || err != nil {
		t.Errorf("during the back-off: waiting %+v, retry %v, err %v", waiting, retry, err)
	}
	if calls := env.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("pulled again during the back-off: %q", calls)
	}

	env.Runtime.PullErr = nil
	env.Clock.Step(10 * time.Second)
	if waiting, retry, err := m.EnsureImage(t.Context(), pod, c, &corev1.ObjectReference{}); waiting != nil || retry != 0 || err != nil {
		t.Errorf("after the back-off: waiting %+v, retry %v, err %v", waiting, retry, err)
	}
}

func waitingReason(w *corev1.ContainerStateWaiting) string {
	if w == nil {
		return ""
	}
	return w.Reason
}
