// Package staticpod reads static pods from a directory (--pod-manifest-path), as the
// kubelet's file source does: one pod per YAML or JSON file, dotfiles ignored, named
// NAME-NODE, with a UID derived from the file's content and the node (so an edit makes a
// new pod) and the kubelet's config annotations. Changes are noticed through fsnotify and
// a periodic rescan.
package staticpod

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/minik8s/minik8s/pkg/poddefaults"
)

// The kubelet's annotations on static and mirror pods.
const (
	AnnotationSource = "kubernetes.io/config.source"
	AnnotationHash   = "kubernetes.io/config.hash"
	AnnotationMirror = "kubernetes.io/config.mirror"
)

// maxManifest bounds a manifest file: a pod is a few KiB; a huge file is a mistake.
const maxManifest = 1 << 20

// IsStatic: the pod came from a file.
func IsStatic(pod *corev1.Pod) bool { return pod.Annotations[AnnotationSource] == "file" }

// IsMirror: the API pod mirrors a static pod.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationMirror]
	return ok
}

// Source watches a manifest directory.
type Source struct {
	Dir, Node string
	Period    time.Duration // rescan period (--file-check-frequency)
	// Update receives the full set of static pods whenever it changes.
	Update func(pods []*corev1.Pod)
	// Invalid hears of each manifest that cannot be used, once per content.
	Invalid func(file string, err error)
	// Log hears of trouble with the directory itself.
	Log *slog.Logger
}

// Run reads the directory, then again on every change and every Period, until ctx ends.
func (s *Source) Run(ctx context.Context) {
	watcher, err := fsnotify.NewWatcher()
	if err == nil {
		defer watcher.Close()
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			s.Log.Error("static pod directory", "dir", s.Dir, "err", err)
		}
		if err := watcher.Add(s.Dir); err != nil {
			s.Log.Warn("cannot watch the static pod directory; rescanning it periodically only", "dir", s.Dir, "err", err)
		}
	}
	var events <-chan fsnotify.Event
	if watcher != nil {
		events = watcher.Events
	}
	tick := time.NewTicker(s.Period)
	defer tick.Stop()
	var last []string
	reported := map[string]string{} // file -> error last reported
	for {
		pods, errs := Read(s.Dir, s.Node)
		uids := make([]string, 0, len(pods))
		for _, p := range pods {
			uids = append(uids, string(p.UID))
		}
		slices.Sort(uids)
		if last == nil || !slices.Equal(uids, last) {
			last = uids
			s.Update(pods)
		}
		for file, err := range errs {
			if reported[file] != err.Error() {
				reported[file] = err.Error()
				s.Invalid(file, err)
			}
		}
		for file := range reported {
			if _, still := errs[file]; !still {
				delete(reported, file)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-events:
			// Editors write in bursts (temp file, rename): let a burst settle.
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// Read parses every manifest in dir; files that cannot be used are returned apart.
func Read(dir, node string) ([]*corev1.Pod, map[string]error) {
	errs := map[string]error{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs
	}
	if err != nil {
		errs[dir] = err
		return nil, errs
	}
	var pods []*corev1.Pod
	names := map[string]string{} // pod name -> file
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		pod, err := readFile(path, node)
		if err != nil {
			errs[path] = err
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		if other, dup := names[key]; dup {
			errs[path] = fmt.Errorf("static pod %s is also defined in %s", key, other)
			continue
		}
		names[key] = path
		pods = append(pods, pod)
	}
	return pods, errs
}

func readFile(path, node string) (*corev1.Pod, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > maxManifest {
		return nil, fmt.Errorf("manifest is %d bytes, more than the %d a pod may take", info.Size(), maxManifest)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, node)
}

// Parse turns a manifest into the static pod the node runs.
func Parse(data []byte, node string) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&pod); err != nil {
		return nil, fmt.Errorf("not a pod manifest: %w", err)
	}
	if (pod.Kind != "" && pod.Kind != "Pod") || (pod.APIVersion != "" && pod.APIVersion != "v1") {
		return nil, fmt.Errorf("kind %q apiVersion %q: a static pod manifest must be a v1 Pod", pod.Kind, pod.APIVersion)
	}
	if pod.Name == "" {
		return nil, errors.New("metadata.name is required")
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, errors.New("spec.containers: a pod needs at least one container")
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == "" || c.Image == "" {
			return nil, errors.New("spec.containers: every container needs a name and an image")
		}
	}
	if pod.Namespace == "" {
		pod.Namespace = corev1.NamespaceDefault
	}
	sum := sha256.Sum256(append(append([]byte{}, data...), node...))
	hash := hex.EncodeToString(sum[:16])
	pod.Name = pod.Name + "-" + strings.ToLower(node)
	if msgs := validation.IsDNS1123Subdomain(pod.Name); len(msgs) > 0 {
		return nil, fmt.Errorf("pod name %q: %s", pod.Name, strings.Join(msgs, "; "))
	}
	pod.UID = types.UID(hash)
	pod.Spec.NodeName = node
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationSource] = "file"
	pod.Annotations[AnnotationHash] = hash
	// Static pods stay on their node whatever its taints say.
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	poddefaults.Pod(&pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return &pod, nil
}
