// Package volumes is minilet's volume manager: it lays out a pod's volumes under
// ROOT/pods/UID/volumes/kubernetes.io~PLUGIN/NAME as the kubelet does (emptyDir,
// configMap, secret, downwardAPI, projected; hostPath, and persistentVolumeClaims and
// generic ephemeral volumes bound to hostPath or local volumes, are the host's own
// paths), keeps configMap, secret and downward API files up to date, turns volumeMounts
// into container mounts and removes everything with the pod.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/podrefs"
)

// Volume is a pod volume set up on the node.
type Volume struct {
	Path     string // on the host
	ReadOnly bool   // configMap, secret, downwardAPI and projected volumes are read-only
}

// Manager sets up and tears down the volumes of one node's pods.
type Manager struct {
	dir         string // ROOT/pods
	client      kubernetes.Interface
	allocatable func() corev1.ResourceList
	tokens      tokenCache
	clock       clock.Clock
	// retries spaces the set-ups of a volume that failed (per pod and volume).
	retries *flowcontrol.Backoff

	mu      sync.Mutex
	mounted map[string]map[string]Volume // pod UID -> volume name -> the volume as set up
}

// New makes a manager keeping pod volumes under podsDir (ROOT/pods), reading
// ConfigMaps, Secrets and claims through client; allocatable is the node's, for
// resourceFieldRefs of containers without limits.
func New(podsDir string, client kubernetes.Interface, allocatable func() corev1.ResourceList, clk clock.Clock) *Manager {
	retries := flowcontrol.NewBackOff(setUpRetryInitial, setUpRetryMax)
	retries.Clock = clk
	return &Manager{dir: podsDir, client: client, allocatable: allocatable, tokens: tokenCache{now: time.Now}, clock: clk, retries: retries}
}

// A volume whose set-up failed is tried again setUpRetryInitial later, doubling to
// setUpRetryMax: the kubelet's reconciler retries a failed MountVolume so (its
// exponentialbackoff), and so a pod whose ConfigMap is missing gets a FailedMount event
// per try, not per sync.
const (
	setUpRetryInitial = 500 * time.Millisecond
	setUpRetryMax     = 2*time.Minute + 2*time.Second
)

// PodDir is where everything of one pod lives on the node.
func (m *Manager) PodDir(uid string) string { return filepath.Join(m.dir, uid) }

func (m *Manager) pluginDir(pod *corev1.Pod, plugin, name string) string {
	return filepath.Join(m.PodDir(string(pod.UID)), "volumes", "kubernetes.io~"+plugin, name)
}

// MountError says which volumes could not be set up, worded as the kubelet's
// FailedMount events are, and which wait to be tried again after an earlier failure.
type MountError struct {
	errs    []error
	backoff []string
}

func (e *MountError) Error() string {
	errs := e.errs
	if len(e.backoff) > 0 {
		errs = append(slices.Clip(errs), fmt.Errorf("volumes %q wait to be set up again after a failure", e.backoff))
	}
	return errors.Join(errs...).Error()
}

// Unwrap gives each volume's failure of this set-up, one FailedMount event each.
func (e *MountError) Unwrap() []error { return e.errs }

// SetUp makes every volume of the pod ready, refreshing configMap, secret and
// downwardAPI contents that changed; it is called on every sync of the pod. The volumes
// it could set up are returned even when others failed (a *MountError), and so is one
// set up before whose refresh failed (its ConfigMap deleted, say): it keeps what it
// had, as the kubelet keeps a mounted volume mounted when its remount fails.
func (m *Manager) SetUp(ctx context.Context, pod *corev1.Pod) (map[string]Volume, error) {
	vols := map[string]Volume{}
	var errs []error
	var backoff []string
	m.mu.Lock()
	mounted := m.mounted[string(pod.UID)]
	m.mu.Unlock()
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		old, ok := mounted[v.Name]
		retryKey := string(pod.UID) + "/" + v.Name
		if m.retries.IsInBackOffSinceUpdate(retryKey, m.clock.Now()) {
			backoff = append(backoff, v.Name)
		} else if vol, err := m.setUp(ctx, pod, v, ok); err != nil {
			m.retries.Next(retryKey, m.clock.Now())
			errs = append(errs, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err))
		} else {
			m.retries.Reset(retryKey)
			vols[v.Name] = vol
			continue
		}
		if ok { // set up before: it keeps what it had
			vols[v.Name] = old
		}
	}
	m.mu.Lock()
	if m.mounted == nil {
		m.mounted = map[string]map[string]Volume{}
	}
	m.mounted[string(pod.UID)] = vols
	m.mu.Unlock()
	if len(errs) > 0 || len(backoff) > 0 {
		return vols, &MountError{errs: errs, backoff: backoff}
	}
	return vols, nil
}

// ForgetExpiredRetries drops the set-up back-offs that have long expired (housekeeping).
func (m *Manager) ForgetExpiredRetries() { m.retries.GC() }

// setUp sets up or refreshes one volume; mounted: it was set up at an earlier sync of
// the pod (its ownership is not changed again).
func (m *Manager) setUp(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, mounted bool) (Volume, error) {
	switch s := v.VolumeSource; {
	case s.EmptyDir != nil:
		dir := m.pluginDir(pod, "empty-dir", v.Name)
		if err := setupDir(dir, s.EmptyDir.Medium == corev1.StorageMediumMemory, m.tmpfsSize(pod, s.EmptyDir.SizeLimit)); err != nil {
			return Volume{}, err
		}
		if !mounted {
			if err := ensureOwnership(pod, dir); err != nil {
				return Volume{}, fmt.Errorf("fsGroup: %w", err)
			}
		}
		return Volume{Path: dir}, nil
	case s.HostPath != nil:
		if err := checkHostPath(s.HostPath); err != nil {
			return Volume{}, err
		}
		return Volume{Path: s.HostPath.Path}, nil
	case s.ConfigMap != nil:
		files, err := m.configMapFiles(ctx, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, mode(s.ConfigMap.DefaultMode, defaultMode), isTrue(s.ConfigMap.Optional))
		if err != nil {
			return Volume{}, err
		}
		return m.writeFiles(pod, "configmap", v.Name, files, false)
	case s.Secret != nil:
		files, err := m.secretFiles(ctx, pod.Namespace, s.Secret.SecretName, s.Secret.Items, mode(s.Secret.DefaultMode, defaultMode), isTrue(s.Secret.Optional))
		if err != nil {
			return Volume{}, err
		}
		return m.writeFiles(pod, "secret", v.Name, files, true)
	case s.DownwardAPI != nil:
		files, err := downwardAPIPayload(pod, s.DownwardAPI.Items, mode(s.DownwardAPI.DefaultMode, defaultMode), m.allocatable())
		if err != nil {
			return Volume{}, err
		}
		return m.writeFiles(pod, "downward-api", v.Name, files, true)
	case s.Projected != nil:
		files, err := m.projectedFiles(ctx, pod, s.Projected)
		if err != nil {
			return Volume{}, err
		}
		return m.writeFiles(pod, "projected", v.Name, files, true)
	case s.PersistentVolumeClaim != nil, s.Ephemeral != nil:
		// A generic ephemeral volume is the claim POD-VOLUME its controller makes.
		claim, readOnly := ephemeral.VolumeClaimName(pod, v), false
		if s.PersistentVolumeClaim != nil {
			claim, readOnly = s.PersistentVolumeClaim.ClaimName, s.PersistentVolumeClaim.ReadOnly
		}
		path, managed, err := m.claimPath(ctx, pod, claim, s.Ephemeral != nil)
		if err != nil {
			return Volume{}, err
		}
		if managed && !readOnly && !mounted {
			if err := ensureOwnership(pod, path); err != nil {
				return Volume{}, fmt.Errorf("fsGroup: %w", err)
			}
		}
		return Volume{Path: path, ReadOnly: readOnly}, nil
	}
	return Volume{}, errors.New("minilet does not support this volume type (supported: emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim, ephemeral)")
}

// writeFiles writes a volume's files atomically in an emptyDir of its own, as the
// kubelet wraps one: secrets, downwardAPI and projections (which may hold secrets) live
// on a tmpfs (memory) so they never reach the node's disk.
func (m *Manager) writeFiles(pod *corev1.Pod, plugin, name string, files map[string]File, memory bool) (Volume, error) {
	dir := m.pluginDir(pod, plugin, name)
	if err := setupDir(dir, memory, m.tmpfsSize(pod, nil)); err != nil {
		return Volume{}, err
	}
	changed, err := writeAtomically(dir, files)
	if err != nil {
		return Volume{}, fmt.Errorf("write volume files: %w", err)
	}
	if gid := fsGroupOf(pod); gid != nil && changed {
		if err := setOwnership(dir, *gid, true); err != nil {
			return Volume{}, fmt.Errorf("fsGroup: %w", err)
		}
	}
	return Volume{Path: dir, ReadOnly: true}, nil
}

func (m *Manager) configMapFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, dflt os.FileMode, optional bool) (map[string]File, error) {
	cm, found, err := podrefs.Get(ctx, m.client.CoreV1().ConfigMaps(ns).Get, "configmap", name, optional)
	if err != nil {
		return nil, err
	}
	if !found {
		return map[string]File{}, nil
	}
	return keyedPayload("configmap", configMapData(cm), items, dflt, optional)
}

func (m *Manager) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, dflt os.FileMode, optional bool) (map[string]File, error) {
	secret, found, err := podrefs.Get(ctx, m.client.CoreV1().Secrets(ns).Get, "secret", name, optional)
	if err != nil {
		return nil, err
	}
	if !found {
		return map[string]File{}, nil
	}
	return keyedPayload("secret", secret.Data, items, dflt, optional)
}

func (m *Manager) projectedFiles(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource) (map[string]File, error) {
	dflt := mode(p.DefaultMode, defaultMode)
	out := map[string]File{}
	var errs []error // every source's, as the kubelet's projected volume reports them
	for _, src := range p.Sources {
		var (
			files map[string]File
			err   error
		)
		switch {
		case src.ConfigMap != nil:
			files, err = m.configMapFiles(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, dflt, isTrue(src.ConfigMap.Optional))
		case src.Secret != nil:
			files, err = m.secretFiles(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, dflt, isTrue(src.Secret.Optional))
		case src.DownwardAPI != nil:
			files, err = downwardAPIPayload(pod, src.DownwardAPI.Items, dflt, m.allocatable())
		case src.ServiceAccountToken != nil:
			files, err = m.tokenFile(ctx, pod, src.ServiceAccountToken, dflt)
		default:
			err = errors.New("unsupported projected volume source")
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for p, f := range files {
			out[p] = f
		}
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return nil, err
	}
	return out, nil
}

// claimPath is the host path of the PersistentVolume a claim of the pod is bound to
// (hostPath or local volumes: the storage of one node), and whether the kubelet manages
// its ownership (local volumes; a hostPath is left as the host has it). The claim of an
// ephemeral volume must be the pod's own.
func (m *Manager) claimPath(ctx context.Context, pod *corev1.Pod, claim string, ephemeralVolume bool) (path string, managed bool, err error) {
	pvc, _, err := podrefs.Get(ctx, m.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get, "persistentvolumeclaim", claim, false)
	if err != nil {
		return "", false, err
	}
	if ephemeralVolume {
		if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
			return "", false, err
		}
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", false, fmt.Errorf("persistentvolumeclaim %q is not bound", claim)
	}
	pv, err := m.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", false, fmt.Errorf("get persistentvolume %q of claim %q: %w", pvc.Spec.VolumeName, claim, err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		if err := checkHostPath(pv.Spec.HostPath); err != nil {
			return "", false, err
		}
		return pv.Spec.HostPath.Path, false, nil
	case pv.Spec.Local != nil:
		if _, err := os.Stat(pv.Spec.Local.Path); err != nil {
			return "", false, fmt.Errorf("local volume %q: %w", pv.Name, err)
		}
		return pv.Spec.Local.Path, true, nil
	}
	return "", false, fmt.Errorf("persistentvolume %q is neither hostPath nor local, the kinds minilet mounts", pv.Name)
}

func isTrue(b *bool) bool { return b != nil && *b }

// setupDir makes an emptyDir's directory as the kubelet's emptyDir does: world-writable
// (0777, chmod only when the bits differ, so fsGroup's setgid stays), and for medium
// Memory a tmpfs mounted over it with no mode (its root is 1777, drwxrwxrwt) and opts
// (its size, if limited).
func setupDir(dir string, memory bool, opts string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if fi, err := os.Lstat(dir); err != nil {
		return err
	} else if fi.Mode().Perm() != 0o777 {
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
	}
	if memory {
		return ensureTmpfs(dir, opts)
	}
	return nil
}

// tmpfsSize is the size option of a pod's tmpfs volume, as the kubelet's
// calculateEmptyDirMemorySize: the node's allocatable memory, the pod's memory limit (of
// its cgroup) when lower, the volume's sizeLimit when lower still. "" (the kernel's
// default, half the RAM) when the node's allocatable is not known.
func (m *Manager) tmpfsSize(pod *corev1.Pod, sizeLimit *resource.Quantity) string {
	var size int64
	if m.allocatable != nil {
		if q, ok := m.allocatable()[corev1.ResourceMemory]; ok {
			size = q.Value()
		}
	}
	if size <= 0 {
		if sizeLimit == nil || sizeLimit.Value() <= 0 {
			return ""
		}
		size = sizeLimit.Value()
	}
	if limit := cm.PodResources(pod, 0).MemoryLimit; limit > 0 && limit <= size {
		size = limit
	}
	if sizeLimit != nil && sizeLimit.Value() > 0 && sizeLimit.Value() <= size {
		size = sizeLimit.Value()
	}
	return "size=" + strconv.FormatInt(size, 10)
}
