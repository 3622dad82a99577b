package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

const (
	// defaultGracePeriod is Kubernetes' default terminationGracePeriodSeconds.
	defaultGracePeriod = 30 * time.Second
	// minGracePeriod is the kubelet's floor: even a grace of 0 gets SIGTERM first.
	minGracePeriod = 2 * time.Second
	// sandboxStopGrace: the pause process exits at once on SIGTERM.
	sandboxStopGrace = 2 * time.Second
)

// gracePeriod is how long a pod's containers get between SIGTERM and SIGKILL:
// the deletion's grace period if the pod is being deleted, else the spec's.
func gracePeriod(pod *corev1.Pod) time.Duration {
	grace := defaultGracePeriod
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return max(grace, minGracePeriod)
}

// stopContainers stops the running containers among cs in parallel, each
// with its preStop hook, then SIGTERM, then SIGKILL when grace is over. pod is
// nil for orphans (no events, no hooks: their specs are unknown).
func (a *Agent) stopContainers(ctx context.Context, pod *corev1.Pod, cs []runtime.Container, grace time.Duration) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range cs {
		if c.State == runtime.StateExited || c.State == runtime.StateCreated {
			continue
		}
		if pod != nil && !c.Sandbox {
			a.containerEvent(pod, c.Name, corev1.EventTypeNormal, eventKilling, "Stopping container %s", c.Name)
		}
		wg.Go(func() {
			grace := grace
			if pod != nil && !c.Sandbox {
				grace = a.runPreStop(ctx, pod, c, grace)
			}
			if err := a.rt.StopContainer(ctx, c.ID, grace); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("stop container %s (%s): %w", c.Name, c.ID, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// removeContainers deletes containers from the runtime.
func (a *Agent) removeContainers(ctx context.Context, cs []runtime.Container) error {
	var errs []error
	for _, c := range cs {
		if err := a.rt.RemoveContainer(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s (%s): %w", c.Name, c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// releaseSandbox frees a pod's sandboxes and its network: CNI teardown first
// (the plugins need the netns), then the pause containers, then the netns.
// A sandbox whose teardown fails is kept, so its id is there for the retry.
func (a *Agent) releaseSandbox(ctx context.Context, ref network.PodRef, sandboxes []runtime.Container) error {
	nsPath := a.netnsPath(ref.UID)
	var errs []error
	for _, sb := range sandboxes {
		if a.hasPodNetwork(sb) { // never for a hostNetwork sandbox
			if err := a.net.TearDown(ctx, sb.ID, nsPath, ref); err != nil {
				errs = append(errs, fmt.Errorf("tear down network of sandbox %s: %w", sb.ID, err))
				continue
			}
		}
		if err := a.stopContainers(ctx, nil, []runtime.Container{sb}, sandboxStopGrace); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := a.removeContainers(ctx, []runtime.Container{sb}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return a.removeNetNS(nsPath)
}

func (a *Agent) netnsPath(podUID string) string { return filepath.Join(a.cfg.netnsDir(), podUID) }

// removeNetNS removes a pod's network namespace if it is there.
func (a *Agent) removeNetNS(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := a.net.RemoveNetNS(path); err != nil {
		return fmt.Errorf("remove network namespace %s: %w", path, err)
	}
	return nil
}

func podRef(pod *corev1.Pod) network.PodRef {
	return network.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}
