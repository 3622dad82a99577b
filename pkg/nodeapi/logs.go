package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/containerwait"
	"github.com/minik8s/minik8s/pkg/crilog"
	"github.com/minik8s/minik8s/pkg/runtime"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// followPoll is how often a follow looks for new output.
	followPoll = 200 * time.Millisecond
	// followStatusPeriod is how often a follow checks that its container still runs.
	followStatusPeriod = time.Second
)

// logOptions are the kubelet's /containerLogs query parameters (PodLogOptions).
type logOptions struct {
	follow, previous bool
	limitBytes       int64 // 0: no limit
	read             crilog.ReadOptions
}

func parseLogOptions(q map[string][]string, now time.Time) (logOptions, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	o := logOptions{read: crilog.ReadOptions{Tail: -1}}
	var err error
	if o.follow, err = parseBool(get("follow"), "follow"); err != nil {
		return o, err
	}
	if o.previous, err = parseBool(get("previous"), "previous"); err != nil {
		return o, err
	}
	if o.read.Timestamps, err = parseBool(get("timestamps"), "timestamps"); err != nil {
		return o, err
	}
	tailLines := get("tailLines")
	switch tail := get("tail"); tail { // its older name, which the kubelet still takes
	case "":
	case "all":
		tailLines = ""
	default:
		tailLines = tail
	}
	if v := tailLines; v != "" {
		if o.read.Tail, err = strconv.ParseInt(v, 10, 64); err != nil || o.read.Tail < 0 {
			return o, badRequest("tailLines %q must be a non-negative integer", v)
		}
	}
	if v := get("limitBytes"); v != "" {
		if o.limitBytes, err = strconv.ParseInt(v, 10, 64); err != nil || o.limitBytes < 1 {
			return o, badRequest("limitBytes %q must be a positive integer", v)
		}
	}
	since, sinceTime := get("sinceSeconds"), get("sinceTime")
	switch {
	case since != "" && sinceTime != "":
		return o, badRequest("at most one of sinceSeconds or sinceTime may be specified")
	case since != "":
		secs, err := strconv.ParseInt(since, 10, 64)
		if err != nil || secs < 1 {
			return o, badRequest("sinceSeconds %q must be a positive integer", since)
		}
		o.read.Since = now.Add(-time.Duration(secs) * time.Second)
	case sinceTime != "":
		if o.read.Since, err = time.Parse(time.RFC3339, sinceTime); err != nil {
			return o, badRequest("sinceTime %q is not an RFC 3339 time", sinceTime)
		}
	}
	return o, nil
}

func parseBool(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("%s %q is not a boolean", name, v)
	}
	return b, nil
}

// serveLogs answers /containerLogs/{namespace}/{pod}/{container}.
func (s *Server) serveLogs(w http.ResponseWriter, r *http.Request) {
	namespace, pod, name := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, err := parseLogOptions(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	// The kubelet's checks of the pod it runs and its spec, in its words.
	spec, here := s.nodePod(r.Context(), namespace, pod)
	if !here {
		writeError(w, notFound("pod %q does not exist", pod))
		return
	}
	if spec != nil && !declares(spec, name) {
		writeError(w, notFound("container %q not found in pod %q", name, pod))
		return
	}
	list, err := s.podContainers(r, namespace, pod)
	var c runtime.Container
	if err == nil {
		c, err = namedContainer(list, namespace, pod, name)
	}
	if he, ok := err.(*httpError); ok && he.code == http.StatusNotFound && spec != nil {
		// Not run here yet: the kubelet answers from the pod's status.
		if id := containerwait.LoggedID(spec, name, opts.previous); id != "" {
			// Its status names a run the node removed since (an evicted pod's): the
			// kubelet's GetContainerLogs, when the runtime no longer knows that ID.
			err = badRequest("unable to retrieve container logs for %s", id)
		} else if opts.previous {
			err = noPrevious(name, pod)
		} else if why := notStarted(spec, name); why != nil {
			err = why
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if opts.previous {
		if c, err = s.lastTerminated(r, list, namespace, pod, name); err != nil {
			writeError(w, err)
			return
		}
	}
	logs, err := crilog.OpenReader(c.LogPath, opts.read)
	if err != nil {
		writeError(w, fmt.Errorf("log of container %s in pod %s/%s: %w", name, namespace, pod, err))
		return
	}
	defer logs.Close()
	w.Header().Set("Content-Type", "text/plain")
	var out io.Writer = w
	if opts.limitBytes > 0 {
		out = &limitWriter{w: w, left: opts.limitBytes}
	}
	if _, err := logs.CopyTo(out); err != nil || !opts.follow || opts.previous || c.State != runtime.StateRunning {
		return
	}
	s.follow(r.Context(), w, out, logs, c.ID)
}

// follow copies what is appended to the log (across rotations) until the container stops
// running (or is gone), the client leaves or the byte limit is reached.
func (s *Server) follow(ctx context.Context, w http.ResponseWriter, out io.Writer, logs *crilog.Reader, id string) {
	flush := http.NewResponseController(w)
	_ = flush.Flush()
	poll := time.NewTicker(followPoll)
	defer poll.Stop()
	lastCheck := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
		n, err := logs.CopyTo(out)
		if err != nil {
			return // the limit is reached or the client went away
		}
		if n > 0 {
			_ = flush.Flush()
		}
		if time.Since(lastCheck) < followStatusPeriod {
			continue
		}
		lastCheck = time.Now()
		if !s.stillRunning(ctx, id) {
			time.Sleep(followPoll) // its last words reach the file after it exits
			_, _ = logs.CopyTo(out)
			return
		}
	}
}

func (s *Server) stillRunning(ctx context.Context, id string) bool {
	list, err := s.rt.ListContainers(ctx, "")
	if err != nil {
		return ctx.Err() == nil // a runtime hiccup does not end the follow
	}
	for _, c := range list {
		if c.ID == id {
			return c.State == runtime.StateRunning
		}
	}
	return false
}

// namedContainer is the newest container name among the containers of pod namespace/name
// (newest first), in any state.
func namedContainer(list []runtime.Container, namespace, pod, name string) (runtime.Container, error) {
	var names []string
	for _, c := range list {
		if c.Sandbox {
			continue
		}
		if c.Name == name {
			if c.LogPath == "" {
				return runtime.Container{}, badRequest("container %s in pod %s/%s keeps no log", name, namespace, pod)
			}
			return c, nil
		}
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return runtime.Container{}, notFound("container %q not found in pod %s/%s; its containers: %s", name, namespace, pod, strings.Join(slices.Compact(names), ", "))
}

// lastTerminated is the container's last terminated run as its pod's status names it
// (lastState.terminated), which is what the kubelet reads for `logs --previous`: in
// CrashLoopBackOff the run that just ended, for a container running again the run before;
// list is the pod's containers.
func (s *Server) lastTerminated(r *http.Request, list []runtime.Container, namespace, pod, name string) (runtime.Container, error) {
	none := noPrevious(name, pod)
	if s.client == nil {
		return runtime.Container{}, errors.New("this node API has no API client to read the pod's status from")
	}
	p, err := s.client.CoreV1().Pods(namespace).Get(r.Context(), pod, metav1.GetOptions{})
	if err != nil {
		return runtime.Container{}, fmt.Errorf("pod %s/%s: %w", namespace, pod, err)
	}
	var id string
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, cs := range statuses {
			if cs.Name == name && cs.LastTerminationState.Terminated != nil {
				id = runtime.IDFromStatus(cs.LastTerminationState.Terminated.ContainerID)
			}
		}
	}
	if id == "" {
		return runtime.Container{}, none
	}
	for _, c := range list {
		if c.ID == id && c.LogPath != "" {
			return c, nil
		}
	}
	return runtime.Container{}, none
}

func noPrevious(name, pod string) error {
	return badRequest("previous terminated container %q in pod %q not found", name, pod)
}

// notStarted is the kubelet's validateContainerLogStatus for a container of pod that has
// not run on the node: why it waits, as the pod's status says, or that it has no status
// yet; nil when its status says it ran.
func notStarted(pod *corev1.Pod, name string) error {
	listed, waiting := containerwait.Message(pod, name)
	switch {
	case !listed:
		return badRequest("container %q in pod %q is not available", name, pod.Name)
	case waiting != "":
		return badRequest("%s", waiting)
	}
	return nil
}

// limitWriter writes at most left bytes, then fails.
type limitWriter struct {
	w    io.Writer
	left int64
}

var errLimit = errors.New("limitBytes reached")

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimit
	}
	cut := p[:min(int64(len(p)), l.left)]
	n, err := l.w.Write(cut)
	l.left -= int64(n)
	if err == nil && len(cut) < len(p) {
		err = errLimit
	}
	return n, err
}
