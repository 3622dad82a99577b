// Package volumes is minilet's volume manager: it lays out a pod's volumes under
// ROOT/pods/UID/volumes/kubernetes.io~PLUGIN/NAME as the kubelet does (emptyDir,
// configMap, secret, downwardAPI, projected; hostPath, and persistentVolumeClaims and
// generic ephemeral volumes bound to hostPath or local volumes, are the host's own
// paths; image volumes are the runtime's to mount), keeps configMap, secret and downward API files up to date, turns volumeMounts
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
	"strings"
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
	ReadOnly bool   // configMap, secret, downwardAPI, projected and image volumes are read-only
	// Image is an image volume's image, which the runtime mounts (no Path), as the
	// kubelet leaves image volumes to CRI.
	Image string
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
// FailedMount events are, which wait to be tried again after an earlier failure, and
// which the kubelet would not even take into its desired state (Unprocessed).
type MountError struct {
	errs        []error
	backoff     []string
	unprocessed error
}

func (e *MountError) Error() string {
	errs := e.errs
	if len(e.backoff) > 0 {
		errs = append(slices.Clip(errs), fmt.Errorf("volumes %q wait to be set up again after a failure", e.backoff))
	}
	if e.unprocessed != nil {
		errs = append(slices.Clip(errs), e.unprocessed)
	}
	return errors.Join(errs...).Error()
}

// Unwrap gives each volume's failure of this set-up, one FailedMount event each.
func (e *MountError) Unwrap() []error { return e.errs }

// Unprocessed is, when a claim of the pod could not be taken as a volume (not bound, say),
// the error the kubelet's WaitForAttachAndMount returns at once for it (its desired state's
// pod errors), worded as that function's: the pod's used volumes not set up, the volumes
// needing an attach (none here: minilet attaches nothing), the used volumes not taken,
// then the errors, sorted and joined by "; " as its verifyVolumesMountedFunc pops them.
// Nil when there is none, or when every used volume is set up (one set up before keeps
// what it had), as that function then returns nil.
func (e *MountError) Unprocessed() error { return e.unprocessed }

// unprocessedError builds MountError.Unprocessed from the claims' errors (by volume) and
// the volumes set up. Only volumes some container mounts count, as the kubelet's
// getExpectedVolumes has them; so does an error only of such a volume, since its
// desired-state populator skips the others (processPodVolumes).
func unprocessedError(pod *corev1.Pod, failed map[string]error, vols map[string]Volume) error {
	used := Used(pod)
	var unmounted, notTaken, errs []string
	for _, name := range used {
		if _, ok := vols[name]; !ok {
			unmounted = append(unmounted, name)
		}
		if err, ok := failed[name]; ok {
			notTaken = append(notTaken, name)
			errs = append(errs, err.Error())
		}
	}
	if len(errs) == 0 || len(unmounted) == 0 { // all set up: WaitForAttachAndMount succeeds
		return nil
	}
	slices.Sort(errs)
	return fmt.Errorf("unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %s",
		unmounted, []string{}, notTaken, strings.Join(slices.Compact(errs), "; "))
}

// Used are the names of the pod's volumes its containers (init, app and ephemeral) mount
// or use as devices, sorted: the kubelet's GetPodVolumeNames. Only these are set up.
func Used(pod *corev1.Pod) []string {
	var names []string
	add := func(mounts []corev1.VolumeMount, devices []corev1.VolumeDevice) {
		for _, m := range mounts {
			names = append(names, m.Name)
		}
		for _, d := range devices {
			names = append(names, d.Name)
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// SetUp makes every volume of the pod its containers use (Used) ready, refreshing configMap, secret and
// downwardAPI contents that changed; it is called on every sync of the pod. The volumes
// it could set up are returned even when others failed (a *MountError), and so is one
// set up before whose refresh failed (its ConfigMap deleted, say): it keeps what it
// had, as the kubelet keeps a mounted volume mounted when its remount fails.
func (m *Manager) SetUp(ctx context.Context, pod *corev1.Pod) (map[string]Volume, error) {
	vols := map[string]Volume{}
	var errs []error
	var backoff []string
	unprocessed := map[string]error{}
	m.mu.Lock()
	mounted := m.mounted[string(pod.UID)]
	m.mu.Unlock()
	used := Used(pod)
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !slices.Contains(used, v.Name) { // the kubelet's populator ignores it (processPodVolumes)
			continue
		}
		old, ok := mounted[v.Name]
		retryKey := string(pod.UID) + "/" + v.Name
		if m.retries.IsInBackOffSinceUpdate(retryKey, m.clock.Now()) {
			backoff = append(backoff, v.Name)
		} else if vol, err := m.setUp(ctx, pod, v, ok); errors.As(err, new(notProcessed)) {
			// Not a failed mount: no MountVolume event, no back-off (the kubelet's
			// populator tries the claim again at each of its loops).
			unprocessed[v.Name] = err
		} else if err != nil {
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
	// A claim not taken stops the pod only while a container needs it unmounted, as the
	// kubelet waits only for those (unprocessedError).
	notTaken := unprocessedError(pod, unprocessed, vols)
	if len(errs) > 0 || len(backoff) > 0 || notTaken != nil {
		return vols, &MountError{errs: errs, backoff: backoff, unprocessed: notTaken}
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
	case s.Image != nil: // pulled by the pod's sync, mounted by the runtime
		return Volume{Image: s.Image.Reference, ReadOnly: true}, nil
	}
	return Volume{}, errors.New("minilet does not support this volume type (supported: emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim, ephemeral, image)")
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
// its ownership (local volumes; a hostPath is left as the host has it).
func (m *Manager) claimPath(ctx context.Context, pod *corev1.Pod, claim string, ephemeralVolume bool) (path string, managed bool, err error) {
	pv, err := m.claimVolume(ctx, pod, claim, ephemeralVolume)
	if err != nil {
		return "", false, notProcessed{err}
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

// notProcessed is a volume the kubelet would not take into its desired state of the
// world: its claim or the claim's volume is not usable yet. The kubelet reports it through
// WaitForAttachAndMount's error, not as a failed mount (MountError.Unprocessed).
type notProcessed struct{ error }

func (e notProcessed) Unwrap() error { return e.error }

// pvcProtectionFinalizer is the claim finalizer of the pvc-protection controller (also in
// pkg/control/admission/storageprotection, which would bring the API server's registry
// into minilet).
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// claimVolume is the PersistentVolume a claim of the pod is bound to, checked and its
// errors worded as the kubelet's desired-state populator does before it takes the volume
// (createVolumeSpec, getPVCExtractPV, getPVSpec). The claim of an ephemeral volume must
// be the pod's own.
func (m *Manager) claimVolume(ctx context.Context, pod *corev1.Pod, claim string, ephemeralVolume bool) (*corev1.PersistentVolume, error) {
	failed := func(format string, args ...any) error {
		return fmt.Errorf("error processing PVC %s/%s: %s", pod.Namespace, claim, fmt.Sprintf(format, args...))
	}
	pvc, err := m.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	switch {
	case err != nil:
		return nil, failed("failed to fetch PVC from API server: %v", err)
	case pvc.DeletionTimestamp != nil && !slices.Contains(pvc.Finalizers, pvcProtectionFinalizer):
		return nil, failed("PVC is being deleted")
	case pvc.Status.Phase != corev1.ClaimBound:
		return nil, failed("PVC is not bound")
	case pvc.Spec.VolumeName == "":
		return nil, failed("PVC has empty pvc.Spec.VolumeName")
	}
	if ephemeralVolume {
		if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
			return nil, err
		}
	}
	name := pvc.Spec.VolumeName
	pv, err := m.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err != nil:
		return nil, failed("failed to fetch PV %s from API server: %v", name, err)
	case pv.Spec.ClaimRef == nil:
		return nil, failed("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", name)
	case pv.Spec.ClaimRef.UID != pvc.UID:
		return nil, failed("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", name, pv.Spec.ClaimRef.UID, pvc.UID)
	}
	return pv, nil
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
