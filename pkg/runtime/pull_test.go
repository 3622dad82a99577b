package runtime_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/minik8s/minik8s/images"
	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/minik8s/minik8s/pkg/runtime/runtimetest"
)

// TestPullFromRegistry: an image pushed to a registry on loopback that asks for a
// password is refused without credentials and pulled with them; then it is listed,
// counted on the image filesystem and removed.
func TestPullFromRegistry(t *testing.T) {
	e := newEnv(t)
	registry := runtimetest.StartRegistry(t, "lab", "s3cret").Addr
	ctx := namespaces.WithNamespace(context.Background(), e.ns)
	remote := registry + "/lab/busybox:v1"
	runtimetest.PushImage(t, e.address, filepath.Join(e.imgDir, images.Tarballs[images.BusyboxRef]), remote, "lab", "s3cret")

	_, err := e.rt.PullImage(ctx, remote, runtime.PullOptions{})
	if err == nil || !strings.Contains(err.Error(), "authorization") {
		t.Fatalf("pull without credentials: %v; want an authorization failure", err)
	}
	if size, err := e.rt.PullImage(ctx, remote, runtime.PullOptions{Auths: []runtime.RegistryAuth{{Host: registry, Username: "lab", Password: "s3cret"}}}); err != nil || size <= 0 {
		t.Fatalf("pull with credentials: size %d, %v", size, err)
	}
	if ok, err := e.rt.HasImage(ctx, remote); err != nil || !ok {
		t.Fatalf("HasImage after the pull = %v, %v", ok, err)
	}
	if _, err := e.rt.PullImage(ctx, registry+"/lab/missing:v1", runtime.PullOptions{Auths: []runtime.RegistryAuth{{Host: registry, Username: "lab", Password: "s3cret"}}}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("pull of a missing image: %v; want not found", err)
	}

	list, err := e.rt.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(img runtime.Image) bool { return img.Name == remote })
	if i < 0 || list[i].Size <= 0 || list[i].CreatedAt.IsZero() {
		t.Fatalf("ListImages = %+v; want %s with a size and a creation time", list, remote)
	}
	if want := strings.TrimSuffix(remote, ":v1") + "@sha256:"; !strings.HasPrefix(list[i].Ref, want) {
		t.Errorf("ListImages' ref of %s = %q; want %s... (repository@digest, as a container's imageID)", remote, list[i].Ref, want)
	}
	used, capacity, err := e.rt.ImageFsUsage(ctx)
	if err != nil || used == 0 || capacity <= used {
		t.Errorf("ImageFsUsage = %d, %d, %v", used, capacity, err)
	}
	if err := e.rt.RemoveImage(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if ok, _ := e.rt.HasImage(ctx, remote); ok {
		t.Error("image still there after RemoveImage")
	}
}
