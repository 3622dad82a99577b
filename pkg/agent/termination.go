package agent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/crilog"
	"github.com/minik8s/minik8s/pkg/runtime"
)

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
	path := filepath.Join(a.cfg.podsDir(), string(pod.UID), "containers", spec.Name, strconv.Itoa(int(run)))
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
