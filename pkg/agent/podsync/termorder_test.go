package podsync

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// TestTerminationOrder: as the kubelet, sidecars stop after every regular container
// and in the reverse order of their definition; a regular init container and a
// container not running are waited for by none; a pod without sidecars waits for
// nothing; a sidecar waits at most its grace.
func TestTerminationOrder(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: always}, {Name: "setup"}, {Name: "logs", RestartPolicy: always}},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "worker"}, {Name: "done"}},
	}}
	o := newTerminationOrder(clock.RealClock{}, pod, []string{"app", "worker", "proxy", "logs"})
	for name, want := range map[string][]string{"app": nil, "worker": nil, "logs": {"app", "worker"}, "proxy": {"app", "worker", "logs"}} {
		if got := o.waitFor[name]; !slices.Equal(got, want) {
			t.Errorf("%s waits for %q, want %q", name, got, want)
		}
	}

	turn := make(chan string, 4)
	for _, name := range []string{"proxy", "logs", "app", "worker"} {
		go func() {
			o.waitForTurn(name, time.Minute)
			turn <- name
			o.terminated(name)
		}()
	}
	var got []string
	for range 4 {
		got = append(got, <-turn)
	}
	if first := got[:2]; !slices.Contains(first, "app") || !slices.Contains(first, "worker") || got[2] != "logs" || got[3] != "proxy" {
		t.Errorf("stopped in order %q, want app and worker, then logs, then proxy", got)
	}

	if newTerminationOrder(clock.RealClock{}, &corev1.Pod{Spec: corev1.PodSpec{Containers: pod.Spec.Containers}}, []string{"app"}) != nil {
		t.Error("a pod without sidecars has an order")
	}
	stuck := newTerminationOrder(clock.RealClock{}, pod, []string{"app", "proxy"})
	if waited := stuck.waitForTurn("proxy", 50*time.Millisecond); waited < 50*time.Millisecond || waited > 5*time.Second {
		t.Errorf("a sidecar whose app never stops waited %s, want its grace of 50ms", waited)
	}
}
