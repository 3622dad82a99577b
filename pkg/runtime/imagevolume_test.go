package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/moby/sys/mountinfo"

	"github.com/minik8s/minik8s/images"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestImageVolume: an image mount gives a container the image's files read-only, or one
// of its directories (subPath); the image is mounted once per sandbox, whatever the
// containers mounting it, and the container records it (image GC keeps it); a missing
// subPath, a file or one out of the image is refused as CRI's ImageVolumeMountFailed; and
// removing the sandbox leaves no mount, directory, snapshot or lease.
func TestImageVolume(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.importImage(t, images.BusyboxRef)
	dir := t.TempDir()
	e.rt.SetImageVolumeDir(dir)
	sandbox, podUID := e.runSandbox(ctx, t, "vol")

	vol := []runtime.Mount{
		{Image: images.NetexecRef, ContainerPath: "/vol"},
		{Image: images.NetexecRef, ImageSubPath: "etc", ContainerPath: "/sub", ReadOnly: false},
	}
	const script = `cat /sub/passwd && test -x /vol/netexec && test -f /vol/etc/group && ` +
		`if touch /vol/x 2>/dev/null || touch /sub/x 2>/dev/null; then echo WRITABLE; fi`
	var ids []string
	for _, name := range []string{"one", "two"} {
		c, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
			Name: name, Image: images.BusyboxRef, Command: []string{"sh", "-c", script}, Mounts: vol,
			SandboxID: sandbox.ID, LogPath: filepath.Join(e.logsDir, podUID, name+".log"),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
		if !slices.Equal(c.ImageVolumes, []string{images.NetexecRef, images.NetexecRef}) {
			t.Errorf("container %s records image volumes %q, want the volume's image per mount", name, c.ImageVolumes)
		}
		if err := e.rt.StartContainer(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		c = waitState(t, e, c.ID, runtime.StateExited)
		logs, _ := os.ReadFile(c.LogPath)
		if c.ExitCode != 0 || !strings.Contains(string(logs), "root:x:0:0") || strings.Contains(string(logs), "WRITABLE") {
			t.Errorf("container %s: exit %d, output %q; want the image's files, read-only", name, c.ExitCode, logs)
		}
	}
	if mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir)); err != nil || len(mounts) != 1 {
		t.Errorf("mounts under %s: %d (%v), want the image once for the sandbox", dir, len(mounts), err)
	}

	for sub, want := range map[string]string{
		"nope":    "no such file or directory",
		"netexec": "only directory subpath is supported",
		"../..":   "path escapes from parent",
	} {
		_, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
			Name: "bad", Image: images.BusyboxRef, SandboxID: sandbox.ID,
			Mounts: []runtime.Mount{{Image: images.NetexecRef, ImageSubPath: sub, ContainerPath: "/vol"}},
		})
		if err == nil || !strings.Contains(err.Error(), "failed to mount image volume: ImageVolumeMountFailed: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("subPath %q: %v, want ImageVolumeMountFailed: %s", sub, err, want)
		}
	}

	for _, id := range append(ids, sandbox.ID) {
		if err := e.rt.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	e.expectNothingLeft(t, ids...)
	if mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir)); err != nil || len(mounts) != 0 {
		t.Errorf("mounts left under %s: %d (%v)", dir, len(mounts), err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("left in %s: %v (%v)", dir, entries, err)
	}
	nsCtx := namespaces.WithNamespace(ctx, e.ns)
	err := e.client.SnapshotService("").Walk(nsCtx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind != snapshots.KindCommitted {
			t.Errorf("snapshot left: %s (%v)", info.Name, info.Kind)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	if leases, err := e.client.LeasesService().List(nsCtx); err != nil || len(leases) != 0 {
		t.Errorf("leases left: %v (%v)", leases, err)
	}
}
