package runtime

import (
	"context"
	"fmt"
	"strconv"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
)

// Labels minilet keeps on its containerd containers.
const (
	labelPrefix        = "io.minik8s."
	LabelPodUID        = labelPrefix + "pod-uid"
	LabelPodNamespace  = labelPrefix + "pod-namespace"
	LabelPodName       = labelPrefix + "pod-name"
	LabelContainerName = labelPrefix + "container-name"
	LabelSandbox       = labelPrefix + "sandbox"    // "true" on pause containers
	LabelSandboxID     = labelPrefix + "sandbox-id" // the pod's pause container
	LabelSpecHash      = labelPrefix + "spec-hash"
	LabelNetNS         = labelPrefix + "netns" // network namespace path; "" is the host's
	LabelLogPath       = labelPrefix + "log-path"
	// Lifecycle labels: set when minilet starts a task and when it first sees it exit,
	// so the exit survives the task's deletion (a containerd restart deletes dead tasks).
	LabelStartedAt  = labelPrefix + "started-at"
	LabelFinishedAt = labelPrefix + "finished-at"
	LabelExitCode   = labelPrefix + "exit-code"
)

// sandboxName is the Container.Name of pause containers.
const sandboxName = "sandbox"

// State is where a container is in its life.
type State string

const (
	StateCreated State = "created" // no task started yet
	StateRunning State = "running"
	StateExited  State = "exited"
	StateUnknown State = "unknown" // started, but its task is gone without a recorded exit, or paused
)

// Container is what minilet needs to know about one containerd container.
type Container struct {
	ID           string
	PodUID       string
	PodNamespace string
	PodName      string
	Name         string // container name in the pod spec; "sandbox" for the pause container
	Image        string
	SpecHash     string
	Sandbox      bool
	SandboxID    string // for app containers: the pod's pause container
	NetNSPath    string
	LogPath      string
	State        State
	ExitCode     int32
	StartedAt    time.Time
	FinishedAt   time.Time
	PID          uint32 // of the running task; 0 otherwise
}

// ListContainers returns the containers of one pod, or of every pod when podUID is "".
func (r *Runtime) ListContainers(ctx context.Context, podUID string) ([]Container, error) {
	ctx = r.nsContext(ctx)
	filter := fmt.Sprintf("labels.%q", LabelPodUID)
	if podUID != "" {
		filter = fmt.Sprintf("labels.%q==%q", LabelPodUID, podUID)
	}
	list, err := r.client.Containers(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	out := make([]Container, 0, len(list))
	for _, c := range list {
		status, err := r.status(ctx, c)
		if errdefs.IsNotFound(err) {
			continue // removed while we were listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, status)
	}
	return out, nil
}

// ContainerStatus returns the current state of the container id.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (Container, error) {
	ctx = r.nsContext(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return Container{}, fmt.Errorf("loading container %s: %w", id, err)
	}
	return r.status(ctx, c)
}

// status combines the container's labels with its task's state, recording an exit the
// first time it is seen.
func (r *Runtime) status(ctx context.Context, c containerd.Container) (Container, error) {
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: %w", c.ID(), err)
	}
	out := fromLabels(info)

	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		switch {
		case !out.FinishedAt.IsZero():
			out.State = StateExited
		case out.StartedAt.IsZero():
			out.State = StateCreated
		default:
			out.State = StateUnknown
		}
		return out, nil
	}
	if err != nil {
		return Container{}, fmt.Errorf("task of container %s: %w", c.ID(), err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return Container{}, fmt.Errorf("status of task %s: %w", c.ID(), err)
	}
	switch st.Status {
	case containerd.Created:
		out.State = StateCreated
	case containerd.Running:
		out.State = StateRunning
		out.PID = task.Pid()
	case containerd.Stopped:
		out.State = StateExited
		out.ExitCode = int32(st.ExitStatus)
		out.FinishedAt = st.ExitTime
		if _, recorded := info.Labels[LabelFinishedAt]; !recorded {
			if err := recordExit(ctx, c, st.ExitStatus, st.ExitTime); err != nil {
				return Container{}, err
			}
		}
	default:
		out.State = StateUnknown
	}
	return out, nil
}

func recordExit(ctx context.Context, c containerd.Container, code uint32, at time.Time) error {
	_, err := c.SetLabels(ctx, map[string]string{
		LabelExitCode:   strconv.FormatUint(uint64(code), 10),
		LabelFinishedAt: at.UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return fmt.Errorf("recording the exit of container %s: %w", c.ID(), err)
	}
	return nil
}

func fromLabels(info containers.Container) Container {
	l := info.Labels
	out := Container{
		ID:           info.ID,
		PodUID:       l[LabelPodUID],
		PodNamespace: l[LabelPodNamespace],
		PodName:      l[LabelPodName],
		Name:         l[LabelContainerName],
		Image:        info.Image,
		SpecHash:     l[LabelSpecHash],
		Sandbox:      l[LabelSandbox] == "true",
		SandboxID:    l[LabelSandboxID],
		NetNSPath:    l[LabelNetNS],
		LogPath:      l[LabelLogPath],
		StartedAt:    parseTime(l[LabelStartedAt]),
		FinishedAt:   parseTime(l[LabelFinishedAt]),
	}
	if code, err := strconv.ParseInt(l[LabelExitCode], 10, 32); err == nil {
		out.ExitCode = int32(code)
	}
	return out
}

// parseTime reads a lifecycle label; a missing or garbled one is the zero time.
func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
