package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// Crash-loop back-off of the kubelet: 10 s, doubling up to 5 min.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 5 * time.Minute
)

// Waiting reasons of a container, as the kubelet reports them.
const (
	reasonContainerCreating    = "ContainerCreating"
	reasonCrashLoopBackOff     = "CrashLoopBackOff"
	reasonCreateConfigError    = "CreateContainerConfigError"
	reasonCreateContainerError = "CreateContainerError"
	reasonRunContainerError    = "RunContainerError"
)

// syncContainer brings one container of the pod in line with its spec:
// starts it if it never ran, restarts it after an exit when the restart
// policy says so (with back-off), and replaces it when its spec changed.
func (a *Agent) syncContainer(ctx context.Context, st *podState, pod *corev1.Pod, spec *corev1.Container, policy corev1.RestartPolicy, sandbox *runtime.Container, all []runtime.Container) (time.Duration, error) {
	hash := containerHash(spec)
	history := containersNamed(all, spec.Name)
	if len(history) == 0 {
		return a.startContainer(ctx, st, pod, spec, sandbox, hash, false, "")
	}
	cur := history[0]
	switch cur.State {
	case runtime.StateRunning:
		if cur.SpecHash == hash {
			return 0, nil
		}
		a.containerEvent(pod, spec.Name, corev1.EventTypeNormal, eventKilling, "Container %s definition changed, will be restarted", spec.Name)
		if err := a.stopContainers(ctx, nil, []runtime.Container{cur}, gracePeriod(pod)); err != nil { // nil: the event is above
			return 0, err
		}
		return a.startContainer(ctx, st, pod, spec, sandbox, hash, true, "")
	case runtime.StateCreated:
		// Made but never started: what a failed start left behind.
		if err := a.removeContainers(ctx, []runtime.Container{cur}); err != nil {
			return 0, err
		}
		return a.startContainer(ctx, st, pod, spec, sandbox, hash, false, "")
	case runtime.StateExited:
		if !shouldRestart(policy, cur.ExitCode) {
			delete(st.waiting, spec.Name)
			return 0, nil
		}
		key := crashBackoffKey(pod, spec.Name, hash)
		if a.backoff.IsInBackOffSince(key, cur.FinishedAt) {
			delay := a.backoff.Get(key)
			st.waiting[spec.Name] = corev1.ContainerStateWaiting{
				Reason:  reasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, spec.Name, pod.Name, pod.Namespace, pod.UID),
			}
			a.containerEvent(pod, spec.Name, corev1.EventTypeWarning, eventBackOff, "Back-off restarting failed container %s in pod %s_%s(%s)", spec.Name, pod.Name, pod.Namespace, pod.UID)
			return max(delay-a.clock.Since(cur.FinishedAt), time.Second), nil
		}
		a.backoff.Next(key, cur.FinishedAt)
		return a.startContainer(ctx, st, pod, spec, sandbox, hash, true, "")
	default:
		return 0, fmt.Errorf("container %s (%s) of pod %s is in state %q", spec.Name, cur.ID, podKey(pod), cur.State)
	}
}

// shouldRestart applies a pod's restartPolicy to a container that exited.
func shouldRestart(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

// crashBackoffKey names a container's crash-loop back-off; a new spec starts a fresh one.
func crashBackoffKey(pod *corev1.Pod, name, hash string) string {
	return string(pod.UID) + "/" + name + "/" + hash
}

// startContainer pulls the image if needed, then creates and starts the
// container in the sandbox. restart counts it as a restart of an earlier one;
// pidTarget, when set, is the container whose PID namespace it joins.
func (a *Agent) startContainer(ctx context.Context, st *podState, pod *corev1.Pod, spec *corev1.Container, sandbox *runtime.Container, hash string, restart bool, pidTarget string) (time.Duration, error) {
	st.trace.mark("containerPrep", a.clock.Now())
	if after, err := a.ensureImage(ctx, st, pod, spec); after > 0 || err != nil {
		return after, err
	}
	st.trace.mark("image", a.clock.Now())
	env, err := a.containerEnv(ctx, pod, spec, st.podIP.String())
	if err != nil {
		return 0, a.containerFailed(st, pod, spec.Name, reasonCreateConfigError, err)
	}
	mounts, err := volumes.ContainerMounts(spec, st.volumes)
	if err == nil {
		mounts, err = a.podDNSMounts(pod, st.podIP, mounts)
	}
	if err != nil {
		return 0, a.containerFailed(st, pod, spec.Name, reasonCreateContainerError, err)
	}
	count := st.restartCounts[spec.Name]
	if restart {
		count++
	}
	logPath := a.containerLogPath(pod, spec.Name, count)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return 0, a.containerFailed(st, pod, spec.Name, reasonCreateContainerError, err)
	}
	terminationLog, mounts, err := a.terminationLog(pod, spec, count, mounts)
	if err != nil {
		return 0, a.containerFailed(st, pod, spec.Name, reasonCreateContainerError, err)
	}
	labels := podLabels(pod)
	labels["io.kubernetes.container.name"] = spec.Name
	c, err := a.rt.CreateContainer(ctx, runtime.ContainerConfig{
		PodUID:         string(pod.UID),
		Name:           spec.Name,
		Image:          spec.Image,
		RestartCount:   count,
		Command:        expandAll(spec.Command, env),
		Args:           expandAll(spec.Args, env),
		Env:            env,
		WorkingDir:     spec.WorkingDir,
		SandboxID:      sandbox.ID,
		LogPath:        logPath,
		TerminationLog: terminationLog,
		Labels:         labels,
		SpecHash:       hash,
		Mounts:         mounts,
		Security:       securityOf(pod, spec, a.cfg.seccompDir()),
		Namespaces:     namespacesOf(pod),
		PIDTargetID:    pidTarget,
		Stdin:          spec.Stdin,
		StdinOnce:      spec.StdinOnce,
		TTY:            spec.TTY,
		Linux: runtime.Linux{
			CgroupParent: cm.PodCgroup(a.cfg.CgroupRoot, pod),
			Resources:    cm.ContainerResources(spec),
			OOMScoreAdj:  ptr.To(max(cm.OOMScoreAdj(pod, spec, a.capacity.Memory().Value()), a.oomFloor)),
		},
	})
	if cfgErr := (*runtime.ConfigError)(nil); errors.As(err, &cfgErr) {
		return 0, a.containerFailed(st, pod, spec.Name, reasonCreateConfigError, err)
	}
	if err != nil {
		return 0, a.containerFailed(st, pod, spec.Name, reasonCreateContainerError, err)
	}
	st.restartCounts[spec.Name] = count
	st.trace.mark("create", a.clock.Now())
	a.containerEvent(pod, spec.Name, corev1.EventTypeNormal, eventCreated, "Created container: %s", spec.Name)
	if err := a.rt.StartContainer(ctx, c.ID); err != nil {
		// The container stays, exited with StartError: its restart backs off as a crash's.
		return 0, a.containerFailed(st, pod, spec.Name, reasonRunContainerError, err)
	}
	delete(st.waiting, spec.Name)
	st.trace.mark("start", a.clock.Now())
	a.containerEvent(pod, spec.Name, corev1.EventTypeNormal, eventStarted, "Started container %s", spec.Name)
	return 0, a.runPostStart(ctx, st, pod, spec, c.ID)
}

// containerFailed records why a container could not be made or started, for
// its status and as an event, and returns the error for the sync.
func (a *Agent) containerFailed(st *podState, pod *corev1.Pod, name, reason string, err error) error {
	st.waiting[name] = corev1.ContainerStateWaiting{Reason: reason, Message: err.Error()}
	a.containerEvent(pod, name, corev1.EventTypeWarning, eventFailed, "Error: %v", err)
	return fmt.Errorf("container %s of pod %s: %s: %w", name, podKey(pod), reason, err)
}

// containerLogPath is where a container's output goes: one file per run,
// like the kubelet's /var/log/pods/<ns>_<pod>_<uid>/<container>/<n>.log.
func (a *Agent) containerLogPath(pod *corev1.Pod, name string, restartCount int32) string {
	return filepath.Join(a.podLogDir(pod.Namespace, pod.Name, string(pod.UID)), name, strconv.Itoa(int(restartCount))+".log")
}

func (a *Agent) podLogDir(namespace, name, uid string) string {
	return filepath.Join(a.cfg.logsDir(), namespace+"_"+name+"_"+uid)
}
