package podsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/lifecycle"
	"github.com/minik8s/minik8s/pkg/agent/staticpod"
	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/crilog"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// TerminatePod stops and removes everything of a pod being deleted (or
// already gone from the API), then deletes a gracefully deleted pod for good
// (grace period 0), as the kubelet does once its containers have stopped.
func (s *Syncer) TerminatePod(ctx context.Context, st *PodState, pod *corev1.Pod, gone bool) error {
	s.probes.StopLivenessAndStartup(pod.UID) // readiness is probed until the containers stopped
	s.endings.forget(pod.UID)                // deleted: there is nothing left to fail
	s.allocated.forget(pod.UID)
	if !st.terminated {
		if !gone && !staticpod.IsStatic(pod) {
			if err := s.stopAndReport(ctx, st, pod); err != nil {
				return err
			}
		}
		grace := gracePeriod(pod)
		if gone && !staticpod.IsStatic(pod) {
			// The API server removes a pod that still runs only once its grace period
			// was cut to 0 (a forced deletion): the kubelet's floor is all it gets. A
			// static pod whose file went keeps its own.
			grace = minGracePeriod
		}
		if err := s.killPod(ctx, pod, podRef(pod), grace); err != nil {
			return fmt.Errorf("stop pod %s: %w", PodKey(pod), err)
		}
		s.probes.Forget(pod.UID)
		if err := cm.RemovePodCgroup(s.cfg.CgroupRoot, string(pod.UID)); err != nil {
			return fmt.Errorf("remove cgroups of pod %s: %w", PodKey(pod), err)
		}
		if err := s.volumes.TearDown(string(pod.UID)); err != nil {
			return fmt.Errorf("tear down volumes of pod %s: %w", PodKey(pod), err)
		}
		if err := os.RemoveAll(s.podLogDir(pod.Namespace, pod.Name, string(pod.UID))); err != nil {
			return fmt.Errorf("remove logs of pod %s: %w", PodKey(pod), err)
		}
		st.terminated = true
	}
	if gone {
		return nil
	}
	err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) { // Conflict: a newer pod of that name
		return fmt.Errorf("delete pod %s: %w", PodKey(pod), err)
	}
	return nil
}

// stopAndReport stops a deleted pod's containers and writes its terminal status, as the
// kubelet does before the pod may go: Succeeded if every container exited 0, else
// Failed. A pod held by a finalizer (a Job's pods) shows so how it ended, and its
// controller counts it and lets it go.
func (s *Syncer) stopAndReport(ctx context.Context, st *PodState, pod *corev1.Pod) error {
	if IsTerminal(pod.Status.Phase) || st.lastStatus != nil && IsTerminal(st.lastStatus.Phase) {
		return nil // its status already says how it ended
	}
	all, err := s.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
	}
	stop := func() error { return s.stopContainers(ctx, pod, appContainersOf(all), gracePeriod(pod)) }
	if err := s.stopReporting(ctx, st, pod, stop); err != nil {
		return fmt.Errorf("stop pod %s: %w", PodKey(pod), err)
	}
	if all, err = s.rt.ListContainers(ctx, string(pod.UID)); err != nil {
		return fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
	}
	ps := s.podStatus(st, pod, all, false)
	// Nothing restarts now, whatever the restart policy.
	if ps.Phase = status.Phase(&pod.Spec, ps.InitContainerStatuses, ps.ContainerStatuses, true); !IsTerminal(ps.Phase) {
		ps.Phase = corev1.PodFailed
	}
	return s.writeStatus(ctx, st, pod, ps)
}

// killPod stops every container of a pod (its containers in parallel, then
// its sandbox), removes them and frees its network. pod is nil for an
// orphan, which gets no events.
func (s *Syncer) killPod(ctx context.Context, pod *corev1.Pod, ref network.PodRef, grace time.Duration) error {
	all, err := s.rt.ListContainers(ctx, ref.UID)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	apps := appContainersOf(all)
	if err := s.stopContainers(ctx, pod, apps, grace); err != nil {
		return err
	}
	if err := s.releaseSandbox(ctx, ref, sandboxesOf(all)); err != nil {
		return err
	}
	return s.removeContainers(ctx, apps)
}

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
	return max(killGrace(pod), minGracePeriod)
}

// killGrace is the grace period a container killed on its own (a failed postStart
// hook, a changed spec, a failed probe) starts from, as the kubelet's
// setTerminationGracePeriod: the deletion's, else the spec's, before the 2 s floor. At 0
// the kubelet's killContainer runs no preStop hook.
func killGrace(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultGracePeriod
}

// stopContainers stops the running containers among cs in parallel, each
// with its preStop hook, then SIGTERM, then SIGKILL when grace is over; sidecars
// stop after the regular containers (terminationOrder). pod is nil for orphans (no
// events, no hooks: their specs are unknown).
func (s *Syncer) stopContainers(ctx context.Context, pod *corev1.Pod, cs []runtime.Container, grace time.Duration) error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		running []runtime.Container
		names   []string
	)
	for _, c := range cs {
		if c.State != runtime.StateExited && c.State != runtime.StateCreated {
			running = append(running, c)
			names = append(names, c.Name)
		}
	}
	order := newTerminationOrder(s.clock, pod, names)
	for _, c := range running {
		if pod != nil && !c.Sandbox {
			s.ContainerEvent(pod, c.Name, corev1.EventTypeNormal, eventKilling, "Stopping container %s", c.Name)
		}
		wg.Go(func() {
			defer order.terminated(c.Name)
			grace := grace
			if pod != nil && !c.Sandbox {
				grace = s.runPreStop(ctx, pod, c, grace)
				if waited := order.waitForTurn(c.Name, grace); waited > 0 {
					grace = max(grace-waited, minGracePeriod)
				}
			}
			if err := s.rt.StopContainer(ctx, c.ID, grace); err != nil {
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
func (s *Syncer) removeContainers(ctx context.Context, cs []runtime.Container) error {
	var errs []error
	for _, c := range cs {
		if err := s.rt.RemoveContainer(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s (%s): %w", c.Name, c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// releaseSandbox frees a pod's sandboxes and its network: CNI teardown first
// (the plugins need the netns), then the pause containers, then the netns.
// A sandbox whose teardown fails is kept, so its id is there for the retry.
func (s *Syncer) releaseSandbox(ctx context.Context, ref network.PodRef, sandboxes []runtime.Container) error {
	nsPath := s.netnsPath(ref.UID)
	var errs []error
	for _, sb := range sandboxes {
		if s.hostNet.HasPodNetwork(sb) { // never for a hostNetwork sandbox
			if err := s.net.TearDown(ctx, sb.ID, nsPath, ref); err != nil {
				errs = append(errs, fmt.Errorf("tear down network of sandbox %s: %w", sb.ID, err))
				continue
			}
		}
		if err := s.stopContainers(ctx, nil, []runtime.Container{sb}, sandboxStopGrace); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.removeContainers(ctx, []runtime.Container{sb}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return s.removeNetNS(nsPath)
}

func (s *Syncer) netnsPath(podUID string) string { return filepath.Join(s.cfg.NetNSDir, podUID) }

// removeNetNS removes a pod's network namespace if it is there.
func (s *Syncer) removeNetNS(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := s.net.RemoveNetNS(path); err != nil {
		return fmt.Errorf("remove network namespace %s: %w", path, err)
	}
	return nil
}

// orphanGrace is how long an orphan's containers get to stop: nobody waits
// for them, but they still get SIGTERM first.
const orphanGrace = minGracePeriod

// KillOrphan stops and removes the containers and network of a pod this node does not
// know (housekeeping's orphan cleanup); it gets no events.
func (s *Syncer) KillOrphan(ctx context.Context, podUID string) error {
	return s.killPod(ctx, nil, network.PodRef{UID: podUID}, orphanGrace)
}

func podRef(pod *corev1.Pod) network.PodRef {
	return network.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

// The kubelet's bounds on a termination message: what the file holds, and the end of
// the log used instead under FallbackToLogsOnError.
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	fallbackLogBytes      = 2048
)

// terminationLog makes the empty file behind a container's terminationMessagePath
// (PODS/UID/containers/NAME/RUN, one per run) and mounts it there, unless a volume is
// mounted at that path already.
func (s *Syncer) terminationLog(pod *corev1.Pod, spec *corev1.Container, run int32, mounts []runtime.Mount) (string, []runtime.Mount, error) {
	if spec.TerminationMessagePath == "" {
		return "", mounts, nil
	}
	for _, m := range mounts {
		if filepath.Clean(m.ContainerPath) == filepath.Clean(spec.TerminationMessagePath) {
			return "", mounts, nil
		}
	}
	path := filepath.Join(s.podDir(pod), "containers", spec.Name, strconv.Itoa(int(run)))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", nil, fmt.Errorf("termination message file: %w", err)
	}
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return "", nil, fmt.Errorf("termination message file: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil { // writable by any user the container runs as
		return "", nil, fmt.Errorf("termination message file: %w", err)
	}
	return path, append(mounts, runtime.Mount{HostPath: path, ContainerPath: spec.TerminationMessagePath}), nil
}

// terminationLogs are what containers' termination message files held, by container
// ID, read before a finished pod's volumes go: the files live in the pod's directory,
// which the release removes, and the status written after it still reports them.
type terminationLogs map[string][]byte

// keep reads the termination message files of cs, which have stopped.
func (k terminationLogs) keep(cs []runtime.Container) {
	for _, c := range cs {
		if c.TerminationLog != "" {
			k[c.ID] = k.read(c)
		}
	}
}

// read is what container c's termination message file holds, as kept or read now.
func (k terminationLogs) read(c runtime.Container) []byte {
	if msg, ok := k[c.ID]; ok {
		return msg
	}
	if c.TerminationLog == "" {
		return nil
	}
	f, err := os.Open(c.TerminationLog)
	if err != nil {
		return nil
	}
	defer f.Close()
	msg, _ := io.ReadAll(io.LimitReader(f, maxTerminationMessage))
	return msg
}

// terminationMessage is what an exited container left: its termination message file
// (kept holds those of a released pod), or, under FallbackToLogsOnError when that is
// empty and the container failed, the end of its log.
func terminationMessage(spec *corev1.Container, c runtime.Container, kept terminationLogs) string {
	if msg := kept.read(c); len(msg) > 0 {
		return string(msg)
	}
	if spec.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError || c.ExitCode == 0 || c.LogPath == "" {
		return ""
	}
	logs, err := crilog.OpenReader(c.LogPath, crilog.ReadOptions{Tail: fallbackLogLines})
	if err != nil {
		return ""
	}
	defer logs.Close()
	var tail bytes.Buffer
	_, _ = logs.CopyTo(&tail)
	out := tail.Bytes()
	return string(out[max(0, len(out)-fallbackLogBytes):])
}

// runtimePodIP is the pod's address as the kubelet's HTTP hooks find it: from the
// runtime's newest sandbox, not the API's status, which a pod killed soon after its first
// start (a failed postStart hook) does not have yet. Only an HTTP hook without a host
// needs it, as only that one makes the kubelet ask the runtime.
func (s *Syncer) runtimePodIP(ctx context.Context, pod *corev1.Pod) string {
	all, err := s.rt.ListContainers(ctx, string(pod.UID))
	if sandboxes := sandboxesOf(all); err == nil && len(sandboxes) > 0 {
		if ip := sandboxIP(sandboxes[0], s.cfg.NodeIP); ip != nil {
			return ip.String()
		}
	}
	return pod.Status.PodIP
}

// runPreStop runs the container's preStop hook within grace and returns what is left
// of grace for SIGTERM (at least the kubelet's floor of 2 s). As the kubelet's
// killContainer, no hook runs without grace: a grace of 0 gets just the floor.
func (s *Syncer) runPreStop(ctx context.Context, pod *corev1.Pod, rc runtime.Container, grace time.Duration) time.Duration {
	if grace <= 0 {
		return minGracePeriod
	}
	c := specOf(pod, rc.Name)
	if c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return grace
	}
	start := s.clock.Now()
	hookCtx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	podIP := pod.Status.PodIP
	if get := c.Lifecycle.PreStop.HTTPGet; get != nil && get.Host == "" {
		podIP = s.runtimePodIP(hookCtx, pod)
	}
	if err := lifecycle.Run(hookCtx, s.execInID(rc.ID), pod, c, podIP, c.Lifecycle.PreStop, s.hookEvents(pod)); err != nil {
		// As the kubelet: the hook's words go to the log, not to the event, where they
		// could show secrets.
		s.log.Warn("preStop hook failed", "pod", PodKey(pod), "container", c.Name, "err", err)
		s.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
	}
	return max(grace-s.clock.Since(start), minGracePeriod)
}

// specOf is the pod's container (init or app) called name.
func specOf(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
