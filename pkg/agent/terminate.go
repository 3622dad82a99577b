package agent

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
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/crilog"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// terminatePod stops and removes everything of a pod being deleted (or
// already gone from the API), then deletes a gracefully deleted pod for good
// (grace period 0), as the kubelet does once its containers have stopped.
func (a *Agent) terminatePod(ctx context.Context, st *podState, pod *corev1.Pod, gone bool) error {
	if a.probes != nil {
		a.probes.Forget(pod.UID) // probes of a terminating pod stop
	}
	if !st.terminated {
		if err := a.killPod(ctx, pod, podRef(pod), gracePeriod(pod)); err != nil {
			return fmt.Errorf("stop pod %s: %w", podKey(pod), err)
		}
		if err := cm.RemovePodCgroup(a.cfg.CgroupRoot, string(pod.UID)); err != nil {
			return fmt.Errorf("remove cgroups of pod %s: %w", podKey(pod), err)
		}
		if err := a.volumes.TearDown(string(pod.UID)); err != nil {
			return fmt.Errorf("tear down volumes of pod %s: %w", podKey(pod), err)
		}
		if err := os.RemoveAll(a.podLogDir(pod.Namespace, pod.Name, string(pod.UID))); err != nil {
			return fmt.Errorf("remove logs of pod %s: %w", podKey(pod), err)
		}
		st.terminated = true
	}
	if gone {
		return nil
	}
	err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) { // Conflict: a newer pod of that name
		return fmt.Errorf("delete pod %s: %w", podKey(pod), err)
	}
	return nil
}

// killPod stops every container of a pod (its containers in parallel, then
// its sandbox), removes them and frees its network. pod is nil for an
// orphan, which gets no events.
func (a *Agent) killPod(ctx context.Context, pod *corev1.Pod, ref network.PodRef, grace time.Duration) error {
	all, err := a.rt.ListContainers(ctx, ref.UID)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	apps := appContainersOf(all)
	if err := a.stopContainers(ctx, pod, apps, grace); err != nil {
		return err
	}
	if err := a.releaseSandbox(ctx, ref, sandboxesOf(all)); err != nil {
		return err
	}
	return a.removeContainers(ctx, apps)
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

// orphanGrace is how long an orphan's containers get to stop: nobody waits
// for them, but they still get SIGTERM first.
const orphanGrace = minGracePeriod

// cleanupOrphans removes what belongs to no pod this node knows: containers,
// netns and log directories of pods that were deleted while minilet was
// down, or are not bound to this node any more, and pod addresses held by
// sandboxes that are gone. Pods that are known keep
// theirs, which is how a restarted minilet adopts running pods.
func (a *Agent) cleanupOrphans(ctx context.Context) error {
	// Look at the disk and the runtime before asking what is known: a pod
	// made after this point is in the known set already.
	containers, err := a.rt.ListContainers(ctx, "")
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	netnsNames, err := dirNames(a.cfg.netnsDir())
	if err != nil {
		return err
	}
	logDirs, err := dirNames(a.cfg.logsDir())
	if err != nil {
		return err
	}
	volumeDirs, err := a.volumes.PodUIDs()
	if err != nil {
		return err
	}
	known := a.knownPods()

	var errs []error
	orphans := map[string]bool{}
	for _, c := range containers {
		if !known[types.UID(c.PodUID)] {
			orphans[c.PodUID] = true
		}
	}
	for _, uid := range netnsNames {
		if !known[types.UID(uid)] {
			orphans[uid] = true
		}
	}
	for uid := range orphans {
		a.log.Info("removing containers and network of a pod that is not on this node", "podUID", uid)
		if err := a.killPod(ctx, nil, network.PodRef{UID: uid}, orphanGrace); err != nil {
			errs = append(errs, fmt.Errorf("clean up pod %s: %w", uid, err))
			continue
		}
		errs = append(errs, cm.RemovePodCgroup(a.cfg.CgroupRoot, uid))
	}
	for _, uid := range volumeDirs {
		if !known[types.UID(uid)] {
			errs = append(errs, a.volumes.TearDown(uid))
		}
	}
	freed, err := network.ReleaseOrphanedIPs(a.cfg.CNINetworksDir(), func() (map[string]bool, error) {
		all, err := a.rt.ListContainers(ctx, "")
		ids := map[string]bool{}
		for _, c := range sandboxesOf(all) {
			ids[c.ID] = true
		}
		return ids, err
	})
	if len(freed) > 0 {
		a.log.Info("freed the pod addresses of sandboxes that are gone", "ips", freed)
	}
	errs = append(errs, err)
	for _, dir := range logDirs {
		uid := dir[strings.LastIndex(dir, "_")+1:]
		if !known[types.UID(uid)] {
			if err := os.RemoveAll(filepath.Join(a.cfg.logsDir(), dir)); err != nil {
				errs = append(errs, fmt.Errorf("remove logs of pod %s: %w", uid, err))
			}
		}
	}
	return errors.Join(errs...)
}

// knownPods are the pods bound to this node plus those whose worker is still
// tearing them down.
func (a *Agent) knownPods() map[types.UID]bool {
	known := map[types.UID]bool{}
	for _, pod := range a.nodePods() {
		known[pod.UID] = true
	}
	for uid := range a.workers.UIDs() {
		known[uid] = true
	}
	return known
}

func dirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
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
func (a *Agent) terminationLog(pod *corev1.Pod, spec *corev1.Container, run int32, mounts []runtime.Mount) (string, []runtime.Mount, error) {
	if spec.TerminationMessagePath == "" {
		return "", mounts, nil
	}
	for _, m := range mounts {
		if filepath.Clean(m.ContainerPath) == filepath.Clean(spec.TerminationMessagePath) {
			return "", mounts, nil
		}
	}
	path := filepath.Join(a.cfg.PodsDir(), string(pod.UID), "containers", spec.Name, strconv.Itoa(int(run)))
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

// terminationMessage is what an exited container left: its termination message file,
// or, under FallbackToLogsOnError when that is empty and the container failed, the end
// of its log.
func terminationMessage(spec *corev1.Container, c runtime.Container) string {
	if c.TerminationLog != "" {
		if f, err := os.Open(c.TerminationLog); err == nil {
			msg, _ := io.ReadAll(io.LimitReader(f, maxTerminationMessage))
			f.Close()
			if len(msg) > 0 {
				return string(msg)
			}
		}
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
