package runtime

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
)

// Labels minilet keeps on its containerd containers.
const (
	labelPrefix         = "io.minik8s."
	LabelPodUID         = labelPrefix + "pod-uid"
	LabelPodNamespace   = labelPrefix + "pod-namespace"
	LabelPodName        = labelPrefix + "pod-name"
	LabelContainerName  = labelPrefix + "container-name"
	LabelSandbox        = labelPrefix + "sandbox"    // "true" on pause containers
	LabelSandboxID      = labelPrefix + "sandbox-id" // the pod's pause container
	LabelSpecHash       = labelPrefix + "spec-hash"
	LabelNetNS          = labelPrefix + "netns"        // the network namespace joined (the pod's or, hostNetwork, the node's)
	LabelHostNetwork    = labelPrefix + "host-network" // "true": in the node's network, not wired by CNI
	LabelLogPath        = labelPrefix + "log-path"
	LabelTerminationLog = labelPrefix + "termination-log"
	// Lifecycle labels: set when minilet starts a task and when it first sees it exit,
	// so the exit survives the task's deletion (a containerd restart deletes dead tasks).
	LabelStartedAt  = labelPrefix + "started-at"
	LabelFinishedAt = labelPrefix + "finished-at"
	LabelExitCode   = labelPrefix + "exit-code"
	// LabelStartError: the container's task could not be started, and why; it counts
	// as exited with startErrorExitCode, as containerd's CRI reports a failed start.
	LabelStartError = labelPrefix + "start-error"
	// LabelImageRef: the image the container was made from, as CRI's imageRef names it
	// (repository@digest), for the status' imageID.
	LabelImageRef = labelPrefix + "image-ref"
	// LabelImageVolumes: the images the container mounts as image volumes, comma-separated.
	LabelImageVolumes = labelPrefix + "image-volumes"
	// LabelPodIP: on a sandbox, the address its network set-up gave the pod, which CRI's
	// sandbox status reports (a restarted minilet adopts the pod with it).
	LabelPodIP = labelPrefix + "pod-ip"
	// LabelRestartCount: on an app container, its restartCount when it was made.
	LabelRestartCount = labelPrefix + "restart-count"
	// LabelResources: the resources the caller gave the container, as it recorded them
	// (minilet: its spec's requests and limits), kept current by UpdateContainerResources.
	LabelResources = labelPrefix + "resources"
	// LabelUser: the identity the container's process runs as, "UID:GID:G1,G2..." (its OCI
	// spec's user, resolved at creation), which CRI's container status reports.
	LabelUser = labelPrefix + "user"
)

// startErrorExitCode is the exit code of a container whose start failed (containerd CRI's).
const startErrorExitCode = 128

// maxStartErrorLen keeps the start-error label within containerd's 4096-byte label limit.
const maxStartErrorLen = 2048

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
	ImageRef     string   // repository@digest of the image it was made from
	ImageVolumes []string // the images it mounts as image volumes
	SpecHash     string
	RestartCount int32 // of an app container: its restartCount when made
	Sandbox      bool
	SandboxID    string // for app containers: the pod's pause container
	NetNSPath    string
	// HostNetwork: NetNSPath is the node's namespace (a hostNetwork pod), which CNI must
	// never touch; otherwise it is the pod's own.
	HostNetwork bool
	PodIP       string // of a sandbox: the pod's address, once its network is set up
	LogPath     string
	// TerminationLog is the host file mounted at the container's terminationMessagePath.
	TerminationLog string
	State          State
	ExitCode       int32
	StartedAt      time.Time
	FinishedAt     time.Time
	PID            uint32 // of the running task; 0 otherwise
	OOMKilled      bool   // the OOM killer ended it (seen by WatchOOM)
	StartError     string // its task could not be started: why (it is exited, with code 128)
	Resources      string // LabelResources
	User           string // LabelUser ("" for a sandbox, or a container made by an older minilet): see ParseUser
}

// User is the identity a container's process runs as: its uid, gid and additional groups
// (the gid among them), as CRI's LinuxContainerUser.
type User struct {
	UID, GID           int64
	SupplementalGroups []int64
}

// ListContainers returns the containers of one pod, or of every pod when podUID is "".
// Every pod's (minilet's relist, every second) takes two calls to containerd however many
// containers there are: the containers, then all of the namespace's tasks. One pod's asks
// for its few tasks one by one instead: containerd asks every shim when it lists tasks.
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
	var taskOf map[string]*tasktypes.Process
	if podUID == "" {
		resp, err := r.client.TaskService().List(ctx, &tasks.ListTasksRequest{})
		if err != nil {
			return nil, fmt.Errorf("listing tasks: %w", errgrpc.ToNative(err))
		}
		taskOf = make(map[string]*tasktypes.Process, len(resp.Tasks))
		for _, t := range resp.Tasks {
			taskOf[t.ID] = t
		}
	}
	out := make([]Container, 0, len(list))
	for _, c := range list {
		var status Container
		if taskOf != nil {
			status, err = r.statusWith(ctx, c, taskOf[c.ID()])
		} else {
			status, err = r.status(ctx, c)
		}
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

// status is statusWith the container's task, asked of containerd.
func (r *Runtime) status(ctx context.Context, c containerd.Container) (Container, error) {
	resp, err := r.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: c.ID()})
	if err = errgrpc.ToNative(err); err != nil && !errdefs.IsNotFound(err) {
		return Container{}, fmt.Errorf("task of container %s: %w", c.ID(), err)
	}
	var task *tasktypes.Process
	if err == nil {
		task = resp.Process
	}
	return r.statusWith(ctx, c, task)
}

// statusWith combines the container's labels with its task's state (nil: it has no
// task), recording an exit the first time it is seen.
func (r *Runtime) statusWith(ctx context.Context, c containerd.Container, task *tasktypes.Process) (Container, error) {
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: %w", c.ID(), err)
	}
	out := fromLabels(info)
	if task == nil {
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
	switch task.Status {
	case tasktypes.Status_CREATED:
		out.State = StateCreated
	case tasktypes.Status_RUNNING:
		out.State = StateRunning
		out.PID = task.Pid
	case tasktypes.Status_STOPPED:
		var exitedAt time.Time
		if task.ExitedAt != nil {
			exitedAt = task.ExitedAt.AsTime()
		}
		out.State = StateExited
		out.ExitCode = int32(task.ExitStatus)
		out.FinishedAt = exitedAt
		if _, recorded := info.Labels[LabelFinishedAt]; !recorded {
			if err := recordExit(ctx, c, task.ExitStatus, exitedAt); err != nil {
				return Container{}, err
			}
		}
	case tasktypes.Status_UNKNOWN:
		// containerd could not get the task's state in time: its shim did not answer (it
		// logs "get state for <id>", a loaded host). Not knowing is not "gone", which
		// would start the pod over: the caller tries again later.
		return Container{}, fmt.Errorf("state of container %s: its shim did not answer containerd in time", c.ID())
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

// recordStartError marks c as exited at a failed start, with the error as its message.
func recordStartError(ctx context.Context, c containerd.Container, startErr error, at time.Time) error {
	msg := startErr.Error()
	if len(msg) > maxStartErrorLen {
		msg = msg[:maxStartErrorLen]
	}
	_, err := c.SetLabels(ctx, map[string]string{
		LabelExitCode:   strconv.Itoa(startErrorExitCode),
		LabelFinishedAt: at.UTC().Format(time.RFC3339Nano),
		LabelStartError: msg,
	})
	if err != nil {
		return fmt.Errorf("recording the failed start of container %s: %w", c.ID(), err)
	}
	return nil
}

func fromLabels(info containers.Container) Container {
	l := info.Labels
	out := Container{
		ID:             info.ID,
		PodUID:         l[LabelPodUID],
		PodNamespace:   l[LabelPodNamespace],
		PodName:        l[LabelPodName],
		Name:           l[LabelContainerName],
		Image:          info.Image,
		ImageRef:       l[LabelImageRef],
		SpecHash:       l[LabelSpecHash],
		Sandbox:        l[LabelSandbox] == "true",
		SandboxID:      l[LabelSandboxID],
		NetNSPath:      l[LabelNetNS],
		HostNetwork:    l[LabelHostNetwork] == "true",
		PodIP:          l[LabelPodIP],
		LogPath:        l[LabelLogPath],
		TerminationLog: l[LabelTerminationLog],
		Resources:      l[LabelResources],
		StartedAt:      parseTime(l[LabelStartedAt]),
		FinishedAt:     parseTime(l[LabelFinishedAt]),
		OOMKilled:      l[LabelOOMKilled] == "true",
		StartError:     l[LabelStartError],
		User:           l[LabelUser],
	}
	if v := l[LabelImageVolumes]; v != "" {
		out.ImageVolumes = strings.Split(v, ",")
	}
	if code, err := strconv.ParseInt(l[LabelExitCode], 10, 32); err == nil {
		out.ExitCode = int32(code)
	}
	if n, err := strconv.ParseInt(l[LabelRestartCount], 10, 32); err == nil {
		out.RestartCount = int32(n)
	}
	return out
}

// parseTime reads a lifecycle label; a missing or garbled one is the zero time.
func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
