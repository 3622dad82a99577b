package runtime

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/minik8s/minik8s/pkg/crilog"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// killTimeout bounds the wait for a task to die after SIGKILL.
const killTimeout = 10 * time.Second

// ContainerConfig describes an app container of a pod.
type ContainerConfig struct {
	PodUID string // default: the sandbox's; must match it when set
	Name   string
	Image  string
	// Command replaces the image's Entrypoint and Args its Cmd, as in Kubernetes.
	Command []string
	Args    []string
	Env     []string // NAME=value, over the image's environment
	// Hostname is the pod's, which the container finds in $HOSTNAME unless Env sets it,
	// as containerd's CRI sets it.
	Hostname   string
	WorkingDir string // default: the image's
	SandboxID  string // the pod's pause container, whose namespaces the container joins
	LogPath    string // receives stdout and stderr; "" discards them
	// TerminationLog is the host file the container writes its termination message to
	// (mounted by the caller); recorded for the caller to read after the exit.
	TerminationLog string
	Labels         map[string]string
	SpecHash       string // hash of the pod's container spec, to detect changes
	Mounts         []Mount
	Linux          Linux
	Security       Security
	Namespaces     Namespaces // as the pod's sandbox was given
	// PIDTargetID is a running container of the same pod whose PID namespace the container
	// joins (an ephemeral container's targetContainerName, CRI's NamespaceMode TARGET);
	// it applies where the pod shares no PID namespace (neither hostPID nor
	// shareProcessNamespace).
	PIDTargetID string
	// Stdin keeps the container's stdin open for `kubectl attach` (stdin: true); with
	// StdinOnce the first attach's end of input closes it. TTY gives it a terminal.
	Stdin, StdinOnce, TTY bool
	// RestartCount is the container's restartCount in the pod's status, recorded (as the
	// kubelet's restartCount annotation) for a minilet that restarts.
	RestartCount int32
}

// Linux are a container's (or sandbox's) cgroup and kernel settings.
type Linux struct {
	// CgroupParent is the pod's cgroup (cgroupfs layout, e.g.
	// /minik8s/kubepods/burstable/podUID); the container's is CgroupParent/ID. ""
	// leaves it to containerd's default.
	CgroupParent string
	Resources    *specs.LinuxResources
	OOMScoreAdj  *int
}

// specOpts are the OCI spec options for l, for the container id.
func (l Linux) specOpts(id string) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if l.CgroupParent != "" {
		opts = append(opts, oci.WithCgroup(path.Join(l.CgroupParent, id)))
	}
	opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		if r := l.Resources; r != nil {
			if s.Linux == nil {
				s.Linux = &specs.Linux{}
			}
			if s.Linux.Resources == nil {
				s.Linux.Resources = &specs.LinuxResources{}
			}
			// The default spec's device rules stay; the rest is ours.
			s.Linux.Resources.CPU, s.Linux.Resources.Memory, s.Linux.Resources.Pids = r.CPU, r.Memory, r.Pids
		}
		if l.OOMScoreAdj != nil {
			adj := *l.OOMScoreAdj
			s.Process.OOMScoreAdj = &adj
		}
		return nil
	})
	return opts
}

// Mount is a host path bind-mounted into a container.
type Mount struct {
	HostPath, ContainerPath string
	ReadOnly                bool
	Propagation             string // rprivate (default), rslave or rshared
	// Image, instead of HostPath, mounts the files of an image (present on the node),
	// read-only, as CRI's image mounts: ImageSubPath, if set, is a directory in it.
	Image, ImageSubPath string
}

// ociMounts are the bind mounts of ms in the runtime spec's terms.
func ociMounts(ms []Mount) []specs.Mount {
	out := make([]specs.Mount, 0, len(ms))
	for _, m := range ms {
		prop := m.Propagation
		if prop == "" {
			prop = "rprivate"
		}
		rw := "rw"
		if m.ReadOnly {
			rw = "ro"
		}
		out = append(out, specs.Mount{Destination: m.ContainerPath, Type: "bind", Source: m.HostPath, Options: []string{"rbind", prop, rw}})
	}
	return out
}

// CreateContainer creates (but does not start) an app container in the network, IPC and
// UTS namespaces of its pod's sandbox, which must be running.
func (r *Runtime) CreateContainer(ctx context.Context, cfg ContainerConfig) (Container, error) {
	if cfg.Name == "" || cfg.SandboxID == "" {
		return Container{}, fmt.Errorf("container %q of sandbox %q: name and sandbox ID are required", cfg.Name, cfg.SandboxID)
	}
	ctx = r.nsContext(ctx)
	sandbox, err := r.ContainerStatus(ctx, cfg.SandboxID)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: sandbox: %w", cfg.Name, err)
	}
	switch {
	case !sandbox.Sandbox:
		return Container{}, fmt.Errorf("container %s: %s is not a sandbox", cfg.Name, cfg.SandboxID)
	case cfg.PodUID != "" && cfg.PodUID != sandbox.PodUID:
		return Container{}, fmt.Errorf("container %s of pod %s: sandbox %s belongs to pod %s", cfg.Name, cfg.PodUID, cfg.SandboxID, sandbox.PodUID)
	case sandbox.State != StateRunning:
		return Container{}, fmt.Errorf("container %s: sandbox %s is %s, not running", cfg.Name, cfg.SandboxID, sandbox.State)
	case sandbox.NetNSPath == "": // never inherit the runtime's namespace (see SandboxConfig)
		return Container{}, fmt.Errorf("container %s: sandbox %s has no network namespace path", cfg.Name, cfg.SandboxID)
	}

	img, err := r.image(ctx, cfg.Image)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: %w", cfg.Name, err)
	}
	imgSpec, err := img.Spec(ctx)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: reading the config of image %s: %w", cfg.Name, img.Name(), err)
	}
	args := processArgs(imgSpec.Config.Entrypoint, imgSpec.Config.Cmd, cfg.Command, cfg.Args)
	if len(args) == 0 {
		return Container{}, fmt.Errorf("container %s: no command given and image %s has neither Entrypoint nor Cmd", cfg.Name, img.Name())
	}

	// Join the pod's network by its bind-mounted path (runc refuses some /proc/PID/ns/net
	// paths); IPC and UTS exist only in the running pause process.
	spec := []oci.SpecOpts{
		withImageProcess(imgSpec.Config),
		oci.WithProcessArgs(args...),
		oci.WithEnv([]string{"HOSTNAME=" + cfg.Hostname}),
		oci.WithEnv(cfg.Env),
		inShimOf(cfg.SandboxID),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UTSNamespace, Path: nsPath(sandbox.PID, "uts")}),
	}
	if cfg.Namespaces.HostIPC {
		spec = append(spec, oci.WithHostNamespace(specs.IPCNamespace))
	} else {
		spec = append(spec, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.IPCNamespace, Path: nsPath(sandbox.PID, "ipc")}))
	}
	switch {
	case cfg.Namespaces.HostPID:
		spec = append(spec, oci.WithHostNamespace(specs.PIDNamespace))
	case cfg.Namespaces.SharePID:
		spec = append(spec, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: nsPath(sandbox.PID, "pid")}))
	case cfg.PIDTargetID != "":
		target, err := r.ContainerStatus(ctx, cfg.PIDTargetID)
		switch {
		case err != nil:
			return Container{}, fmt.Errorf("container %s: target container: %w", cfg.Name, err)
		case target.Sandbox || target.PodUID != sandbox.PodUID || target.State != StateRunning:
			return Container{}, fmt.Errorf("container %s: target %s is not a running container of pod %s", cfg.Name, cfg.PIDTargetID, sandbox.PodUID)
		}
		spec = append(spec, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: nsPath(target.PID, "pid")}))
	}
	spec = append(spec, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: sandbox.NetNSPath}))
	if cfg.WorkingDir != "" {
		spec = append(spec, oci.WithProcessCwd(cfg.WorkingDir))
	}
	if cfg.TTY {
		spec = append(spec, oci.WithTTY)
	}
	mounts, imageVolumes, err := r.imageMounts(ctx, sandbox.ID, cfg.Mounts)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: %w", cfg.Name, err)
	}
	spec = append(spec, cgroupfsOpts(unifiedCgroups(), cfg.Security.Privileged, mounts)...)
	if len(mounts) > 0 {
		spec = append(spec, oci.WithMounts(ociMounts(mounts)))
	}
	id := newContainerID(sandbox.PodUID, cfg.Name)
	spec = append(spec, cfg.Linux.specOpts(id)...)
	pod := fmt.Sprintf("%s_%s(%s)", sandbox.PodName, sandbox.PodNamespace, sandbox.PodUID) // the kubelet's format.Pod
	security, err := cfg.Security.specOpts(imgSpec.Config.User, pod, cfg.Name)
	if err != nil {
		return Container{}, err
	}
	spec = append(spec, security...)
	labels := withOwnLabels(cfg.Labels, map[string]string{
		LabelPodUID:         sandbox.PodUID,
		LabelPodNamespace:   sandbox.PodNamespace,
		LabelPodName:        sandbox.PodName,
		LabelContainerName:  cfg.Name,
		LabelSandboxID:      cfg.SandboxID,
		LabelSpecHash:       cfg.SpecHash,
		LabelRestartCount:   strconv.Itoa(int(cfg.RestartCount)),
		LabelImageRef:       imageRef(img),
		LabelImageVolumes:   strings.Join(imageVolumes, ","),
		LabelNetNS:          sandbox.NetNSPath,
		LabelHostNetwork:    strconv.FormatBool(sandbox.HostNetwork),
		LabelLogPath:        cfg.LogPath,
		LabelTerminationLog: cfg.TerminationLog,
		LabelStdin:          stdinLabel(cfg.Stdin, cfg.StdinOnce),
		LabelTTY:            strconv.FormatBool(cfg.TTY),
	})

	spec = append(spec, recordUser(labels))
	c, err := r.newContainer(ctx, id, img, spec, labels)
	if err != nil {
		return Container{}, fmt.Errorf("creating container %s of pod %s: %w", cfg.Name, sandbox.PodUID, err)
	}
	return r.status(ctx, c)
}

// newContainer creates container id (a sandbox or an app container) from img, on a new
// snapshot of it, with its stop signal (SIGTERM when it names none).
func (r *Runtime) newContainer(ctx context.Context, id string, img containerd.Image, spec []oci.SpecOpts, labels map[string]string) (containerd.Container, error) {
	return r.client.NewContainer(ctx, id,
		containerd.WithImage(img),
		containerd.WithImageStopSignal(img, "SIGTERM"),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(spec...),
		containerd.WithContainerLabels(labels))
}

// imageRef names img as CRI's imageRef does: its repository and the digest its name
// points to ("localhost/minik8s/busybox@sha256:..."), the pod status' imageID.
func imageRef(img containerd.Image) string {
	named, err := reference.ParseNormalizedNamed(img.Name())
	if err != nil {
		return img.Target().Digest.String()
	}
	return named.Name() + "@" + img.Target().Digest.String()
}

// processArgs applies Kubernetes' rules: a command replaces the image's Entrypoint and
// drops its Cmd; args replace the Cmd.
func processArgs(entrypoint, cmd, command, args []string) []string {
	switch {
	case len(command) > 0:
		return slices.Concat(command, args)
	case len(args) > 0:
		return slices.Concat(entrypoint, args)
	default:
		return slices.Concat(entrypoint, cmd)
	}
}

func nsPath(pid uint32, ns string) string {
	return fmt.Sprintf("/proc/%d/ns/%s", pid, ns)
}

// StartContainer starts a created container, its output going to its log path. A start
// that fails leaves it exited (StartError, code 128).
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.nsContext(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("loading container %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	switch {
	case err == nil:
		// A task left in "created" by an interrupted start is replaced; any other is in use.
		st, err := task.Status(ctx)
		if err != nil {
			return fmt.Errorf("status of task %s: %w", id, err)
		}
		if st.Status != containerd.Created {
			return fmt.Errorf("container %s was already started (task %s)", id, st.Status)
		}
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil {
			return fmt.Errorf("deleting the unstarted task of %s: %w", id, err)
		}
	case !errdefs.IsNotFound(err):
		return fmt.Errorf("task of container %s: %w", id, err)
	}

	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata) // as loaded above: no second call
	if err != nil {
		return fmt.Errorf("labels of container %s: %w", id, err)
	}
	labels := info.Labels
	output := cio.NullIO
	if logPath := labels[LabelLogPath]; logPath != "" {
		output = r.logs.creator(logPath, stdioOf(labels))
	}
	if err := r.startTask(ctx, c, output); err != nil {
		// Like containerd's CRI, the container stays, exited (128) with the error: its
		// restarts back off as a crashing container's do.
		return errors.Join(err, recordStartError(ctx, c, err, time.Now()))
	}
	return nil
}

// startTask creates and starts c's task and records the start time.
func (r *Runtime) startTask(ctx context.Context, c containerd.Container, output cio.Creator) error {
	task, err := c.NewTask(ctx, output)
	if err != nil {
		return fmt.Errorf("failed to create containerd task: %w", err)
	}
	if err := task.Start(ctx); err != nil {
		_, delErr := task.Delete(ctx, containerd.WithProcessKill)
		return errors.Join(fmt.Errorf("failed to start containerd task %q: %w", c.ID(), err), delErr)
	}
	started := time.Now().UTC().Format(time.RFC3339Nano)
	if _, err := c.SetLabels(ctx, map[string]string{LabelStartedAt: started}); err != nil {
		return fmt.Errorf("recording the start of container %s: %w", c.ID(), err)
	}
	return nil
}

// loadContainer loads container id; found is false, with no error, when there is none.
func (r *Runtime) loadContainer(ctx context.Context, id string) (c containerd.Container, found bool, err error) {
	c, err = r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("loading container %s: %w", id, err)
	}
	return c, true, nil
}

// StopContainer sends the container its stop signal (the image's, default SIGTERM),
// then SIGKILL when it has not exited after grace. Stopping a container that is not
// running, or does not exist, does nothing.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.nsContext(ctx)
	c, found, err := r.loadContainer(ctx, id)
	if !found {
		return err
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("task of container %s: %w", id, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return fmt.Errorf("status of task %s: %w", id, err)
	}
	switch st.Status {
	case containerd.Stopped:
		_, err := r.status(ctx, c) // records the exit if nobody has yet
		return err
	case containerd.Created:
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("deleting the unstarted task of %s: %w", id, err)
		}
		return nil
	}

	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited, err := task.Wait(waitCtx)
	if err != nil {
		return fmt.Errorf("waiting for container %s: %w", id, err)
	}
	stopSignal, err := containerd.GetStopSignal(ctx, c, syscall.SIGTERM)
	if err != nil {
		return fmt.Errorf("stop signal of container %s: %w", id, err)
	}
	if err := task.Kill(ctx, stopSignal); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("signalling container %s: %w", id, err)
	}

	var exit containerd.ExitStatus
	select {
	case exit = <-exited:
	case <-ctx.Done():
		return fmt.Errorf("stopping container %s: %w", id, ctx.Err())
	case <-time.After(grace):
		if err := task.Kill(ctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("killing container %s: %w", id, err)
		}
		select {
		case exit = <-exited:
		case <-ctx.Done():
			return fmt.Errorf("stopping container %s: %w", id, ctx.Err())
		case <-time.After(killTimeout):
			return fmt.Errorf("container %s did not exit within %s of SIGKILL", id, killTimeout)
		}
	}
	code, at, err := exit.Result()
	if err != nil {
		return fmt.Errorf("exit status of container %s: %w", id, err)
	}
	return recordExit(ctx, c, code, at)
}

// RemoveContainer kills the container's task if it still runs, then deletes the task,
// the container and its snapshot (a sandbox's image volumes with it), and its log with
// the log's rotated files, as the kubelet's removeContainer removes the container's logs
// with it. Removing a container
// that does not exist does nothing.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.nsContext(ctx)
	c, found, err := r.loadContainer(ctx, id)
	if !found {
		return err
	}
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return fmt.Errorf("labels of container %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	switch {
	case err == nil:
		killCtx, cancel := context.WithTimeout(ctx, killTimeout)
		defer cancel()
		if _, err := task.Delete(killCtx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("deleting the task of container %s: %w", id, err)
		}
	case !errdefs.IsNotFound(err):
		return fmt.Errorf("task of container %s: %w", id, err)
	}
	// A sandbox's image volumes go first: it is kept, to try again, while they cannot.
	if info.Labels[LabelSandbox] == "true" {
		if err := r.releaseImageMounts(ctx, id); err != nil {
			return err
		}
	}
	if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting container %s: %w", id, err)
	}
	var logErr error
	if path := info.Labels[LabelLogPath]; path != "" {
		logErr = crilog.Remove(path)
	}
	return errors.Join(logErr, r.logs.removeLogPipes(id))
}

// UpdateContainerResources changes the CPU and memory of a running container in place,
// as CRI's UpdateContainerResources: the running task's cgroup first, then the stored spec
// (so a restart of the task keeps them) with recorded, the caller's note of them
// (LabelResources).
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, res *specs.LinuxResources, recorded string) error {
	ctx = r.nsContext(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("loading container %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("task of container %s: %w", id, err)
	}
	if err := task.Update(ctx, containerd.WithResources(res)); err != nil {
		return fmt.Errorf("update resources of container %s: %w", id, err)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return fmt.Errorf("spec of container %s: %w", id, err)
	}
	if spec.Linux == nil {
		spec.Linux = &specs.Linux{}
	}
	if spec.Linux.Resources == nil {
		spec.Linux.Resources = &specs.LinuxResources{}
	}
	spec.Linux.Resources.CPU, spec.Linux.Resources.Memory = res.CPU, res.Memory
	err = c.Update(ctx, containerd.UpdateContainerOpts(containerd.WithSpec(spec)),
		func(_ context.Context, _ *containerd.Client, info *containers.Container) error {
			info.Labels[LabelResources] = recorded
			return nil
		})
	if err != nil {
		return fmt.Errorf("record resources of container %s: %w", id, err)
	}
	return nil
}
