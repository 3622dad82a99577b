package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func testManager(t *testing.T, objects ...runtime.Object) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	return New(filepath.Join(dir, "pods"), fake.NewClientset(objects...), func() corev1.ResourceList { return nil }, clocktesting.NewFakeClock(time.Now())), dir
}

// boundClaim is the claim default/data bound to the hostPath volume pv1 at host.
func boundClaim(host string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	return boundTo(corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host}})
}

// boundTo is the claim default/data bound to the volume pv1 of source, each naming the
// other as the PV controller binds them.
func boundTo(source corev1.PersistentVolumeSource) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "claim-uid"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: source, ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data", UID: "claim-uid"}}}
}

// volumePod is the pod default/web whose one container mounts each of vols at /vol/NAME.
func volumePod(vols ...corev1.Volume) *corev1.Pod {
	app := corev1.Container{Name: "app"}
	for _, v := range vols {
		app.VolumeMounts = append(app.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/vol/" + v.Name})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Volumes: vols, Containers: []corev1.Container{app}},
	}
}

// TestUnusedVolumesAreLeftAlone: a volume no container (init, app or ephemeral) mounts or
// uses as a device is neither set up nor waited for, whatever its source, as the kubelet's
// desired-state populator skips it (processPodVolumes: "Volume is not used in the pod,
// ignore it"); it is set up once an ephemeral container mounts it.
func TestUnusedVolumesAreLeftAlone(t *testing.T) {
	m, root := testManager(t)
	pod := volumePod()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}}}},
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "missing"}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/minik8s", Type: ptr.To(corev1.HostPathDirectory)}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil || len(vols) != 0 {
		t.Fatalf("SetUp of volumes nothing mounts: %v, %v; want none set up and no error", vols, err)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", "uid-1", "volumes")); !os.IsNotExist(err) {
		t.Errorf("volume directories made for volumes nothing mounts: %v", err)
	}

	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "config", MountPath: "/config"}}}}}
	vols, err = m.SetUp(context.Background(), pod)
	if _, ok := vols["scratch"]; !ok || len(vols) != 1 {
		t.Errorf("after a debug container mounts scratch and config: %v set up, want scratch", vols)
	}
	if err == nil || !strings.Contains(err.Error(), `volume "config" : configmap "missing" not found`) || strings.Contains(err.Error(), "creds") {
		t.Errorf("after a debug container mounts config: %v, want only config's failure", err)
	}
}

func TestSetUpLaysOutVolumesAsTheKubelet(t *testing.T) {
	host := t.TempDir()
	claim, volume := boundClaim(host)
	m, root := testManager(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"app.conf": "x=1", "other": "o"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"password": []byte("s3cret")}},
		claim, volume,
	)
	pod := volumePod(
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "app.conf", Path: "conf/app.conf", Mode: ptr.To[int32](0o600)}}}}},
		corev1.Volume{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		corev1.Volume{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		corev1.Volume{Name: "both", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "other", Path: "other"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		}}}},
	)
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	volDir := filepath.Join(root, "pods", "uid-1", "volumes")
	if got := vols["scratch"].Path; got != filepath.Join(volDir, "kubernetes.io~empty-dir", "scratch") || vols["scratch"].ReadOnly {
		t.Errorf("emptyDir at %s", got)
	}
	conf := filepath.Join(volDir, "kubernetes.io~configmap", "config", "conf", "app.conf")
	if data, err := os.ReadFile(conf); err != nil || string(data) != "x=1" {
		t.Errorf("configMap item: %q, %v", data, err)
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("configMap item mode %v, %v", fi, err)
	}
	if !vols["config"].ReadOnly {
		t.Error("configMap volume not read-only")
	}
	if data, _ := os.ReadFile(filepath.Join(vols["labels"].Path, "labels")); string(data) != `app="web"` {
		t.Errorf("downwardAPI labels: %q", data)
	}
	if vols["claim"].Path != host {
		t.Errorf("claim at %s, want the PV's hostPath %s", vols["claim"].Path, host)
	}
	for name, want := range map[string]string{"other": "o", "name": "web"} {
		if data, _ := os.ReadFile(filepath.Join(vols["both"].Path, name)); string(data) != want {
			t.Errorf("projected %s: %q", name, data)
		}
	}

	if err := m.TearDown("uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", "uid-1")); !os.IsNotExist(err) {
		t.Errorf("pod directory left after TearDown: %v", err)
	}
}

func TestSetUpFailuresAreWordedAsTheKubelet(t *testing.T) {
	m, _ := testManager(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"a": "1"}})
	pod := volumePod(
		corev1.Volume{Name: "missing", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}}},
		corev1.Volume{Name: "optional", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr.To(true)}}},
		corev1.Volume{Name: "badkey", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "zz", Path: "zz"}}}}},
		corev1.Volume{Name: "nodir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/minik8s", Type: ptr.To(corev1.HostPathDirectory)}}},
	)
	vols, err := m.SetUp(context.Background(), pod)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`MountVolume.SetUp failed for volume "missing" : configmap "nope" not found`,
		`MountVolume.SetUp failed for volume "badkey" : configmap references non-existent config key: zz`,
		`MountVolume.SetUp failed for volume "nodir" : hostPath type check failed: /nonexistent/minik8s is not a directory`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, ok := vols["optional"]; !ok || strings.Contains(err.Error(), `"optional"`) {
		t.Error("a missing optional configMap must give an empty volume")
	}
}

// TestFailedSetUpBacksOff: a volume whose set-up failed is tried again only after a
// back-off, 0.5 s doubling to 2m2s, as the kubelet's volume reconciler retries a failed
// MountVolume (pkg/util/goroutinemap/exponentialbackoff); meanwhile the pod waits with no
// new failure to report, so its FailedMount events come as often as the tries.
func TestFailedSetUpBacksOff(t *testing.T) {
	m, _ := testManager(t)
	clk := m.clock.(*clocktesting.FakeClock)
	pod := volumePod(corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	setUp := func() (set bool, failures int) {
		t.Helper()
		vols, err := m.SetUp(context.Background(), pod)
		mountErr := (*MountError)(nil)
		if err != nil && !errors.As(err, &mountErr) {
			t.Fatalf("SetUp: %v, want a MountError", err)
		}
		if mountErr != nil {
			failures = len(mountErr.Unwrap())
		}
		_, set = vols["v"]
		return set, failures
	}
	for i, step := range []struct {
		wait     time.Duration
		failures int // set-ups tried and failed: one FailedMount event each
	}{{0, 1}, {0, 0}, {499 * time.Millisecond, 0}, {time.Millisecond, 1}, {999 * time.Millisecond, 0}, {time.Millisecond, 1}, {2 * time.Second, 1}} {
		clk.Step(step.wait)
		if set, failures := setUp(); set || failures != step.failures {
			t.Errorf("set-up %d (%v later): volume set %v, %d failures; want unset, %d", i, step.wait, set, failures, step.failures)
		}
	}

	if _, err := m.client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if set, _ := setUp(); set {
		t.Error("set up while its back-off (4 s) runs")
	}
	clk.Step(4 * time.Second)
	if set, failures := setUp(); !set || failures != 0 {
		t.Errorf("after the back-off: volume set %v, %d failures; want set", set, failures)
	}
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		path string
		typ  corev1.HostPathType
		want string // "" = ok
	}{
		{filepath.Join(dir, "new/dir"), corev1.HostPathDirectoryOrCreate, ""},
		{filepath.Join(dir, "new/file"), corev1.HostPathFileOrCreate, ""},
		{file, corev1.HostPathDirectoryOrCreate, "is not a directory"},
		{file, corev1.HostPathFile, ""},
		{dir, corev1.HostPathFile, "is not a file"},
		{file, corev1.HostPathSocket, "is not a socket file"},
		{"/dev/null", corev1.HostPathCharDev, ""},
		{file, corev1.HostPathBlockDev, "is not a block device"},
		{"relative", corev1.HostPathUnset, "not an absolute path"},
		// What is missing is not what the type asks for, in the kubelet's words.
		{filepath.Join(dir, "nothing"), corev1.HostPathFile, "hostPath type check failed: " + filepath.Join(dir, "nothing") + " is not a file"},
		{filepath.Join(dir, "nothing"), corev1.HostPathDirectory, "hostPath type check failed: " + filepath.Join(dir, "nothing") + " is not a directory"},
		{filepath.Join(dir, "nothing"), corev1.HostPathSocket, "is not a socket file"},
		{filepath.Join(dir, "nothing"), corev1.HostPathCharDev, "is not a character device"},
		{filepath.Join(dir, "nothing"), corev1.HostPathBlockDev, "is not a block device"},
		{filepath.Join(dir, "nothing"), corev1.HostPathUnset, ""},
	} {
		err := checkHostPath(&corev1.HostPathVolumeSource{Path: tc.path, Type: &tc.typ})
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s as %q: %v, want %q", tc.path, tc.typ, err, tc.want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "new/file")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("FileOrCreate made %v, %v", fi, err)
	}
}

func TestContainerMountsAndSubPaths(t *testing.T) {
	vol := t.TempDir()
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(vol, "escape"))
	vols := map[string]Volume{"data": {Path: vol}, "cfg": {Path: t.TempDir(), ReadOnly: true}}
	c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
		{Name: "data", MountPath: "/data", SubPath: "app/logs", MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
		{Name: "cfg", MountPath: "/etc/app"},
	}}
	mounts, err := ContainerMounts(c, vols)
	if err != nil {
		t.Fatal(err)
	}
	if mounts[0].HostPath != filepath.Join(vol, "app/logs") || mounts[0].ReadOnly || mounts[0].Propagation != "rslave" {
		t.Errorf("subPath mount %+v", mounts[0])
	}
	if fi, err := os.Stat(filepath.Join(vol, "app/logs")); err != nil || !fi.IsDir() {
		t.Error("missing subPath not made in a writable volume")
	}
	if !mounts[1].ReadOnly || mounts[1].Propagation != "rprivate" {
		t.Errorf("configMap mount %+v", mounts[1])
	}
	for _, sub := range []string{"../x", "/abs", "escape"} {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: sub}}
		if _, err := ContainerMounts(c, vols); err == nil {
			t.Errorf("subPath %q accepted", sub)
		}
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/d"}}
	if _, err := ContainerMounts(c, vols); err == nil {
		t.Error("mount of an unknown volume accepted")
	}
}

// TestRecursiveReadOnlyMounts: minilet makes no recursive read-only mounts, so a mount
// asking for one IfPossible is a plain read-only mount and one asking for it Enabled is
// refused in the kubelet's words (resolveRecursiveReadOnly, for a runtime without them).
func TestRecursiveReadOnlyMounts(t *testing.T) {
	vols := map[string]Volume{"data": {Path: t.TempDir()}}
	for _, tc := range []struct {
		mode        corev1.RecursiveReadOnlyMode
		readOnly    bool
		propagation *corev1.MountPropagationMode
		wantErr     string
	}{
		{mode: corev1.RecursiveReadOnlyDisabled, readOnly: true},
		{mode: corev1.RecursiveReadOnlyIfPossible, readOnly: true},
		{mode: corev1.RecursiveReadOnlyEnabled, readOnly: true,
			wantErr: `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime`},
		{mode: corev1.RecursiveReadOnlyIfPossible,
			wantErr: `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not read-only`},
		{mode: corev1.RecursiveReadOnlyIfPossible, readOnly: true, propagation: ptr.To(corev1.MountPropagationHostToContainer),
			wantErr: `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"`},
	} {
		c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: "/data", ReadOnly: tc.readOnly, RecursiveReadOnly: ptr.To(tc.mode), MountPropagation: tc.propagation},
		}}
		mounts, err := ContainerMounts(c, vols)
		switch {
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%s (readOnly %v): error %v, want %q", tc.mode, tc.readOnly, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || !mounts[0].ReadOnly):
			t.Errorf("%s: mounts %+v, error %v, want a read-only mount", tc.mode, mounts, err)
		}
	}
}

func TestFSGroupOwnsThePodsVolumes(t *testing.T) {
	host := t.TempDir()
	claim, volume := boundClaim(host)
	m, _ := testManager(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"app.conf": "x=1"}},
		claim, volume,
	)
	pod := volumePod(
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o600)}}},
		corev1.Volume{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
	)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](4321)}
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	check := func(path string, wantGid int64, wantMode os.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if gid := int64(fi.Sys().(*syscall.Stat_t).Gid); gid != wantGid || fi.Mode()&wantMode != wantMode {
			t.Errorf("%s: gid %d mode %v, want gid %d and mode bits %v", path, gid, fi.Mode(), wantGid, wantMode)
		}
	}
	check(vols["scratch"].Path, 4321, os.ModeSetgid|0o770)
	check(filepath.Join(vols["config"].Path, "app.conf"), 4321, 0o640) // 0600 plus the group's read
	if fi, _ := os.Stat(host); fi.Sys().(*syscall.Stat_t).Gid == 4321 {
		t.Error("a hostPath PV was given to the fsGroup; the kubelet leaves hostPaths alone")
	}
}

// TestVolumeRootsHaveTheKubeletsModes: the kubelet lays configMap volumes on a disk
// emptyDir (drwxrwxrwx) and secret, downwardAPI and projected volumes, like emptyDirs of
// medium Memory, on a tmpfs mounted without a mode (drwxrwxrwt): `ls -ld` in a container
// shows those modes.
func TestVolumeRootsHaveTheKubeletsModes(t *testing.T) {
	testenv.RequireRoot(t, "mount tmpfs")
	m, _ := testManager(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"a": "1"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"p": []byte("s")}},
	)
	pod := volumePod(
		corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		corev1.Volume{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		corev1.Volume{Name: "memory", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	)
	vols, err := m.SetUp(context.Background(), pod)
	t.Cleanup(func() {
		if err := m.TearDown("uid-1"); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{
		"config": os.ModeDir | 0o777,
		"secret": os.ModeDir | os.ModeSticky | 0o777,
		"labels": os.ModeDir | os.ModeSticky | 0o777,
		"memory": os.ModeDir | os.ModeSticky | 0o777,
	} {
		fi, err := os.Stat(vols[name].Path)
		if err != nil || fi.Mode() != want {
			t.Errorf("%s volume: mode %v (%v), want %v", name, fi.Mode(), err, want)
		}
	}
}

// TestMemoryVolumesAreMountedAsTheKubelet: the kubelet mounts a tmpfs volume (emptyDir
// medium Memory, and the tmpfs of a secret) with its size and, on kernels that know it
// (6.4+), noswap, and no other flag: not nosuid nor nodev (what `mount` shows in the
// container).
func TestMemoryVolumesAreMountedAsTheKubelet(t *testing.T) {
	testenv.RequireRoot(t, "mount tmpfs")
	m, _ := testManager(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"p": []byte("s")}})
	pod := volumePod(
		corev1.Volume{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
	)
	vols, err := m.SetUp(context.Background(), pod)
	t.Cleanup(func() { m.TearDown(string(pod.UID)) })
	if err != nil {
		t.Fatal(err)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(uts.Release[:]), "%d.%d", &major, &minor)
	noswap := major > 6 || major == 6 && minor >= 4
	for _, name := range []string{"mem", "secret"} {
		mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(vols[name].Path))
		if err != nil || len(mounts) != 1 {
			t.Fatalf("mount of %s: %v %v", name, mounts, err)
		}
		if opts := strings.Split(mounts[0].Options, ","); slices.Contains(opts, "nosuid") || slices.Contains(opts, "nodev") {
			t.Errorf("%s tmpfs mounted %s, want neither nosuid nor nodev", name, mounts[0].Options)
		}
		if got := slices.Contains(strings.Split(mounts[0].VFSOptions, ","), "noswap"); got != noswap {
			t.Errorf("%s tmpfs options %s: noswap %v, want %v (kernel %d.%d)", name, mounts[0].VFSOptions, got, noswap, major, minor)
		}
	}
}

// TestMemoryVolumesAreSizedAsTheKubelet: a tmpfs volume (emptyDir medium Memory, and the
// tmpfs of a secret) is as big as the node's allocatable memory, or the pod's memory
// limit when it has one, or the emptyDir's sizeLimit when smaller still: the kubelet's
// calculateEmptyDirMemorySize, what df shows in the container.
func TestMemoryVolumesAreSizedAsTheKubelet(t *testing.T) {
	testenv.RequireRoot(t, "mount tmpfs")
	m, _ := testManager(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"p": []byte("s")}})
	m.allocatable = func() corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	}
	size := func(dir string) string {
		mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(dir))
		if err != nil || len(mounts) != 1 {
			t.Fatalf("mount of %s: %v %v", dir, mounts, err)
		}
		for _, o := range strings.Split(mounts[0].VFSOptions, ",") {
			if strings.HasPrefix(o, "size=") {
				return o
			}
		}
		return mounts[0].VFSOptions
	}
	for _, tc := range []struct {
		name        string
		limit       string
		sizeLimit   string
		mem, secret string
	}{
		{"nolimit", "", "", "size=1048576k", "size=1048576k"},
		{"limit", "256Mi", "", "size=262144k", "size=262144k"},
		{"sizelimit", "256Mi", "64Mi", "size=65536k", "size=262144k"},
		{"bigsizelimit", "256Mi", "2Gi", "size=262144k", "size=262144k"},
	} {
		empty := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
		if tc.sizeLimit != "" {
			empty.SizeLimit = ptr.To(resource.MustParse(tc.sizeLimit))
		}
		pod := volumePod(
			corev1.Volume{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: empty}},
			corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		)
		pod.UID = types.UID("uid-" + tc.name)
		if tc.limit != "" {
			pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tc.limit)}
		}
		vols, err := m.SetUp(context.Background(), pod)
		t.Cleanup(func() { m.TearDown(string(pod.UID)) })
		if err != nil {
			t.Fatal(err)
		}
		if got := size(vols["mem"].Path); got != tc.mem {
			t.Errorf("%s: emptyDir tmpfs %s, want %s", tc.name, got, tc.mem)
		}
		if got := size(vols["secret"].Path); got != tc.secret {
			t.Errorf("%s: secret tmpfs %s, want %s", tc.name, got, tc.secret)
		}
	}
}
