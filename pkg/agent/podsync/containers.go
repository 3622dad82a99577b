package podsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/dns"
	"github.com/minik8s/minik8s/pkg/agent/lifecycle"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
	"github.com/minik8s/minik8s/pkg/restartpolicy"
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
	reasonPostStartHookError   = "PostStartHookError"
)

// syncContainer brings one container of the pod in line with its spec:
// starts it if it never ran, restarts it after an exit when restarts says so
// of its exit code (with back-off), and replaces it when its spec changed.
func (s *Syncer) syncContainer(ctx context.Context, st *PodState, pod *corev1.Pod, spec *corev1.Container, restarts restartCheck, sandbox *runtime.Container, all []runtime.Container) (time.Duration, error) {
	hash := containerHash(spec)
	history := containersNamed(all, spec.Name)
	if len(history) == 0 {
		// A container the runtime has no trace of whose log is there ran before (it was
		// removed behind minilet's back): its new run counts a restart and gets a log of its
		// own, as the kubelet numbers a new container after the logs it finds
		// (calcRestartCountByLogDir).
		_, err := os.Stat(s.containerLogPath(pod, spec.Name, st.restartCounts[spec.Name]))
		return s.startContainer(ctx, st, pod, spec, sandbox, hash, err == nil, "")
	}
	cur := history[0]
	switch cur.State {
	case runtime.StateRunning:
		resizeRestart := resizeRestarts(st, pod, cur, spec)
		if (cur.SpecHash == hash || cur.SpecHash == fingerprint(spec)) && !resizeRestart {
			return 0, nil // a resize in place is resizePod's
		}
		if resizeRestart {
			s.ContainerEvent(pod, spec.Name, corev1.EventTypeNormal, eventKilling, "Container %s resize requires restart", spec.Name)
		} else {
			s.ContainerEvent(pod, spec.Name, corev1.EventTypeNormal, eventKilling, "Container %s definition changed, will be restarted", spec.Name)
		}
		// The kubelet's killContainer: the preStop hook first, then SIGTERM with what is
		// left of the grace period.
		grace := s.runPreStop(ctx, pod, cur, killGrace(pod))
		if err := s.stopContainers(ctx, nil, []runtime.Container{cur}, grace); err != nil { // nil: the event is above
			return 0, err
		}
		return s.startContainer(ctx, st, pod, spec, sandbox, hash, true, "")
	case runtime.StateCreated:
		// Made but never started: what a failed start left behind.
		if err := s.removeContainers(ctx, []runtime.Container{cur}); err != nil {
			return 0, err
		}
		return s.startContainer(ctx, st, pod, spec, sandbox, hash, false, "")
	case runtime.StateExited:
		if !restarts(cur.ExitCode) {
			delete(st.waiting, spec.Name)
			return 0, nil
		}
		key := crashBackoffKey(pod, spec.Name, hash)
		if s.backoff.IsInBackOffSince(key, cur.FinishedAt) {
			delay := s.backoff.Get(key)
			st.waiting[spec.Name] = corev1.ContainerStateWaiting{
				Reason:  reasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, spec.Name, pod.Name, pod.Namespace, pod.UID),
			}
			s.ContainerEvent(pod, spec.Name, corev1.EventTypeWarning, eventBackOff, "Back-off restarting failed container %s in pod %s_%s(%s)", spec.Name, pod.Name, pod.Namespace, pod.UID)
			return max(delay-s.clock.Since(cur.FinishedAt), time.Second), nil
		}
		s.backoff.Next(key, cur.FinishedAt)
		return s.startContainer(ctx, st, pod, spec, sandbox, hash, true, "")
	default:
		return 0, fmt.Errorf("container %s (%s) of pod %s is in state %q", spec.Name, cur.ID, PodKey(pod), cur.State)
	}
}

// restartCheck says whether a container that exited with exitCode runs again.
type restartCheck func(exitCode int32) bool

// appRestarts: an app container runs again as its restart policy and rules, or else the
// pod's restartPolicy, say (the kubelet's ShouldContainerBeRestarted).
func appRestarts(pod *corev1.Pod, c *corev1.Container) restartCheck {
	return func(exitCode int32) bool { return restartpolicy.ContainerShouldRestart(&pod.Spec, c, exitCode) }
}

// crashBackoffKey names a container's crash-loop back-off; a new spec starts a fresh one.
func crashBackoffKey(pod *corev1.Pod, name, hash string) string {
	return string(pod.UID) + "/" + name + "/" + hash
}

// startContainer pulls the image if needed (its image volumes' were by the sync), then creates and starts the
// container in the sandbox. restart counts it as a restart of an earlier one;
// pidTarget, when set, is the container whose PID namespace it joins.
func (s *Syncer) startContainer(ctx context.Context, st *PodState, pod *corev1.Pod, spec *corev1.Container, sandbox *runtime.Container, hash string, restart bool, pidTarget string) (time.Duration, error) {
	st.trace.Mark("containerPrep", s.clock.Now())
	// The kubelet fails a container on its image volumes before it pulls its image.
	if pull := s.imageVolumesWaiting(st, pod, spec); pull != nil {
		st.waiting[spec.Name] = *pull.waiting
		return pull.retry, pull.err
	}
	waiting, after, err := s.images.EnsureImage(ctx, pod, spec, containerRef(pod, spec.Name))
	if waiting != nil {
		st.waiting[spec.Name] = *waiting
		// The kubelet's second event of a container whose image is not there, as its
		// startContainer records it.
		s.ContainerEvent(pod, spec.Name, corev1.EventTypeWarning, eventFailed, "Error: %s", waiting.Reason)
	}
	if after > 0 || err != nil {
		return after, err
	}
	st.trace.Mark("image", s.clock.Now())
	env, err := s.containerEnv(ctx, pod, spec, st.podIP.String(), st.volumes)
	if err != nil {
		return 0, s.containerFailed(st, pod, spec.Name, reasonCreateConfigError, err)
	}
	// The kubelet makes the mounts while it makes the container's config: their errors
	// (a subPath that cannot be, a subPathExpr missing a value) are config errors.
	mounted, err := withSubPaths(spec, env)
	var mounts []runtime.Mount
	if err == nil {
		mounts, err = volumes.ContainerMounts(mounted, st.volumes)
	}
	var kernelHostname string
	if err == nil {
		kernelHostname, err = s.sandboxHostname(pod)
	}
	if err == nil {
		var events []dns.Event
		mounts, events, err = s.cfg.DNS.PodMounts(s.podDir(pod), pod, podHostname(pod), kernelHostname, st.podIP, mounts)
		for _, e := range events {
			s.podEvent(pod, corev1.EventTypeWarning, e.Reason, "%s", e.Message)
		}
	}
	if err != nil {
		return 0, s.containerFailed(st, pod, spec.Name, reasonCreateConfigError, err)
	}
	count := st.restartCounts[spec.Name]
	removed := st.removed[spec.Name]
	if restart || removed.uncounted {
		count++
	}
	logPath := s.containerLogPath(pod, spec.Name, count)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return 0, s.containerFailed(st, pod, spec.Name, reasonCreateContainerError, err)
	}
	terminationLog, mounts, err := s.terminationLog(pod, spec, count, mounts)
	if err != nil {
		return 0, s.containerFailed(st, pod, spec.Name, reasonCreateContainerError, err)
	}
	labels := podLabels(pod)
	labels["io.kubernetes.container.name"] = spec.Name
	labels[runtime.LabelResources] = recordedResources(spec)
	c, err := s.rt.CreateContainer(ctx, runtime.ContainerConfig{
		PodUID:         string(pod.UID),
		Name:           spec.Name,
		Image:          spec.Image,
		RestartCount:   count,
		Command:        expandAll(spec.Command, env),
		Args:           expandAll(spec.Args, env),
		Env:            env,
		Hostname:       kernelHostname,
		WorkingDir:     spec.WorkingDir,
		SandboxID:      sandbox.ID,
		LogPath:        logPath,
		TerminationLog: terminationLog,
		Labels:         labels,
		SpecHash:       hash,
		Mounts:         mounts,
		Security:       securityOf(pod, spec, s.cfg.SeccompDir),
		Namespaces:     namespacesOf(pod),
		PIDTargetID:    pidTarget,
		Stdin:          spec.Stdin,
		StdinOnce:      spec.StdinOnce,
		TTY:            spec.TTY,
		Linux: runtime.Linux{
			CgroupParent: cm.PodCgroup(s.cfg.CgroupRoot, pod),
			Resources:    cm.ContainerResources(pod.Spec.Resources, spec),
			OOMScoreAdj:  ptr.To(max(cm.OOMScoreAdj(pod, spec, s.cfg.Capacity.Memory().Value()), s.cfg.OOMFloor)),
		},
	})
	if cfgErr := (*runtime.ConfigError)(nil); errors.As(err, &cfgErr) {
		return 0, s.containerFailed(st, pod, spec.Name, reasonCreateConfigError, err)
	}
	if err != nil {
		return 0, s.containerFailed(st, pod, spec.Name, reasonCreateContainerError, err)
	}
	st.restartCounts[spec.Name] = count
	if removed.uncounted { // counted now
		removed.uncounted = false
		st.removed[spec.Name] = removed
	}
	st.trace.Mark("create", s.clock.Now())
	s.ContainerEvent(pod, spec.Name, corev1.EventTypeNormal, eventCreated, "Container created")
	if err := s.rt.StartContainer(ctx, c.ID); err != nil {
		// The container stays, exited with StartError: its restart backs off as a crash's.
		return 0, s.containerFailed(st, pod, spec.Name, reasonRunContainerError, err)
	}
	delete(st.waiting, spec.Name)
	st.trace.Mark("start", s.clock.Now())
	s.ContainerEvent(pod, spec.Name, corev1.EventTypeNormal, eventStarted, "Container started")
	return 0, s.runPostStart(ctx, st, pod, spec, c.ID)
}

// containerFailed records why a container could not be made or started, for
// its status and as an event, and returns the error for the sync.
func (s *Syncer) containerFailed(st *PodState, pod *corev1.Pod, name, reason string, err error) error {
	st.waiting[name] = corev1.ContainerStateWaiting{Reason: reason, Message: err.Error()}
	s.ContainerEvent(pod, name, corev1.EventTypeWarning, eventFailed, "Error: %v", err)
	return fmt.Errorf("container %s of pod %s: %s: %w", name, PodKey(pod), reason, err)
}

// containerLogPath is where a container's output goes: one file per run,
// like the kubelet's /var/log/pods/<ns>_<pod>_<uid>/<container>/<n>.log.
func (s *Syncer) containerLogPath(pod *corev1.Pod, name string, restartCount int32) string {
	return filepath.Join(s.podLogDir(pod.Namespace, pod.Name, string(pod.UID)), name, strconv.Itoa(int(restartCount))+".log")
}

func (s *Syncer) podLogDir(namespace, name, uid string) string {
	return filepath.Join(s.cfg.LogsDir, namespace+"_"+name+"_"+uid)
}

// postStartTimeout bounds a postStart hook. The kubelet has none and a hung hook holds
// the pod forever; here it fails the hook instead, so the pod can still be deleted.
const postStartTimeout = 2 * time.Minute

// runPostStart runs the container's postStart hook, if any; on failure the container is
// killed (its preStop hook first), as the kubelet's startContainer does, and its restart
// policy decides what comes next.
func (s *Syncer) runPostStart(ctx context.Context, st *PodState, pod *corev1.Pod, c *corev1.Container, id string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	hookCtx, cancel := context.WithTimeout(ctx, postStartTimeout)
	defer cancel()
	err := lifecycle.Run(hookCtx, s.execInID(id), pod, c, st.podIP.String(), c.Lifecycle.PostStart, s.hookEvents(pod))
	if err == nil {
		return nil
	}
	// Not the hook's output, which may hold secrets: the kubelet keeps it out of the event.
	s.ContainerEvent(pod, c.Name, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	// Until the restart the container waits with the hook's failure, as the kubelet's
	// reason cache has it.
	st.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonPostStartHookError, Message: err.Error()}
	s.ContainerEvent(pod, c.Name, corev1.EventTypeNormal, eventKilling, "FailedPostStartHook")
	// The kill is the kubelet's killContainer: the preStop hook first, within the pod's
	// grace period, then SIGTERM with what is left of it.
	grace := s.runPreStop(ctx, pod, runtime.Container{ID: id, Name: c.Name}, killGrace(pod))
	kill := s.rt.StopContainer(context.WithoutCancel(ctx), id, grace)
	if kill != nil {
		return fmt.Errorf("%w; killing the container: %v", err, kill)
	}
	return err
}

// containerHash fingerprints a container's spec, like the kubelet's
// HashContainer: a running container whose hash differs from its spec's was
// made from an older spec and is restarted. The hash is stored with the
// container, so it survives a minilet restart. Resources and resizePolicy are left
// out: a resize changes them in place (resize.go).
func containerHash(c *corev1.Container) string {
	hashed := *c
	hashed.Resources, hashed.ResizePolicy = corev1.ResourceRequirements{}, nil
	return fingerprint(&hashed)
}

// fingerprint hashes the whole spec: the container hash of minilet before in-place
// resize, which its running containers still carry; they count as unchanged, so an
// upgrade restarts none of them.
func fingerprint(c *corev1.Container) string {
	// A corev1.Container always marshals, deterministically (map keys sorted).
	data, _ := json.Marshal(c)
	h := fnv.New32a()
	h.Write(data)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}
